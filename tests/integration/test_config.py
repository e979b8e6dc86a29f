"""The configuration file and flags as a user meets them."""
import os
import subprocess
import unittest

from harness import BIN, SOURCE_DIR, write_config


def run(*args):
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=30)


class ConfigTest(unittest.TestCase):
    def test_shipped_example_is_valid(self):
        path = os.path.join(SOURCE_DIR, "config/rdma_exporter.yml")
        r = run("--config.check", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("configuration is valid", r.stdout)

    def test_probe_example_of_the_reference_is_valid(self):
        # docs/configuration.md's fleet-style probe example: a UD default
        # class, an RC class and a pinglist block.
        with open(os.path.join(SOURCE_DIR, "docs/configuration.md"), encoding="utf-8") as f:
            doc = f.read()
        section = doc.split("## `probe`", 1)[1]
        example = section.split("```yaml\n", 1)[1].split("```", 1)[0]
        self.assertIn("pinglist:", example)
        self.assertIn("op: ud", example)
        r = run("--config.check", write_config(example))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("configuration is valid", r.stdout)

    def test_check_reports_every_problem_with_position_and_exits_2(self):
        path = write_config("web:\n  max_connections: -1\n  colour: blue\nlog: {level: loud}\n")
        r = run("--config.check", path)
        self.assertEqual(r.returncode, 2)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 3, r.stderr)
        self.assertTrue(lines[0].startswith(f"{path}:2:20: web.max_connections: expected an integer"))
        self.assertTrue(lines[1].startswith(f"{path}:3:3: web.colour: unknown key"))
        self.assertIn("log.level", lines[2])

    def test_check_of_a_missing_file_exits_2(self):
        r = run("--config.check", "/nonexistent.yml")
        self.assertEqual(r.returncode, 2)
        self.assertIn("No such file", r.stderr)

    def test_invalid_configuration_at_start_exits_2(self):
        r = run("--config.file", write_config("web: [1, 2]\n"), "--once")
        self.assertEqual(r.returncode, 2)
        self.assertIn("expected a mapping", r.stderr)
        r = run("--web.listen-address", "nowhere", "--once")
        self.assertEqual(r.returncode, 2)
        self.assertIn("web.listen_address", r.stderr)
        r = run("--devices.include", "(", "--once")
        self.assertEqual(r.returncode, 2)
        self.assertIn("invalid device pattern", r.stderr)

    def test_usage_errors_exit_2(self):
        self.assertEqual(run("--no-such-flag").returncode, 2)
        self.assertEqual(run("stray-argument").returncode, 2)

    def test_missing_cap_net_admin_is_said_once_at_start(self):
        cfg = write_config("qp_counters:\n  ports: [{device: mlx5_0, mode: auto}]\n")
        r = subprocess.run(["setpriv", "--bounding-set=-net_admin", "--inh-caps=-net_admin", BIN,
                            "--once", "--path.sysfs", "/nonexistent", "--config.file", cfg],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr.count("lacks CAP_NET_ADMIN"), 1, r.stderr)
        r = run("--once", "--path.sysfs", "/nonexistent", "--config.file", cfg)
        self.assertNotIn("CAP_NET_ADMIN", r.stderr)  # root has it

    def test_help_and_version(self):
        r = run("--help")
        self.assertEqual(r.returncode, 0)
        for flag in ("--once", "--config.file", "--config.check", "--web.listen-address",
                     "--path.sysfs", "--devices.include", "--devices.exclude", "--log.level"):
            self.assertIn(flag, r.stdout)
        r = run("--version")
        self.assertEqual(r.returncode, 0)
        self.assertTrue(r.stdout.startswith("rdma_exporter "))


if __name__ == "__main__":
    unittest.main()
