"""The daemon's log on stderr: --log.format json and logfmt, escaping of
kernel-supplied names, and the journald priority prefix (docs/configuration.md,
"Logging")."""
import json
import os
import re
import signal
import subprocess
import tempfile
import time
import unittest
import urllib.request

from harness import BIN, LISTENING, Exporter, make_sysfs, wait_log, write_config

TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
# A sysfs device name as odd as the kernel's rules allow: a tab, an escape
# sequence that would colour a terminal, and a newline.
ODD_NAME = "bro\tken\x1b[31m\n0"


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as r:
        return r.read().decode()


# The tests below turn the pcie collector off: its messages name the broken
# device's PCI function, not the device.
def odd_sysfs():
    """A fixture whose one device has ODD_NAME and files that fail to read."""
    root = make_sysfs("broken")
    base = os.path.join(root, "class", "infiniband")
    os.rename(os.path.join(base, "broken0"), os.path.join(base, ODD_NAME))
    return root


def parse_logfmt(line):
    """key=value pairs of one logfmt line; quoted values keep their escapes."""
    fields = {}
    for m in re.finditer(r'([^\s=]+)=("(?:[^"\\]|\\.)*"|[^\s"]*)(?=\s|$)', line):
        fields[m.group(1)] = m.group(2)
    rebuilt = " ".join(f"{k}={v}" for k, v in fields.items())
    assert rebuilt == line, f"not logfmt: {line!r}"
    return fields


class JsonLogTest(unittest.TestCase):
    def test_every_line_is_a_json_object_with_ts_level_msg(self):
        config = write_config("log: {format: logfmt}\n")
        with Exporter("--log.format=json", "--path.sysfs", odd_sysfs(), "--no-collector.pcie",
                      "--config.file", config) as exp:
            scrape(exp.port)  # the sysfs collector fails on the broken device
            wait_log(exp, '"msg":"collector failed"')
            with open(config, "w") as f:
                f.write("web:\n  max_connections: lots\n")
            exp.proc.send_signal(signal.SIGHUP)
            wait_log(exp, '"msg":"reload rejected"')
            self.assertEqual(exp.stop(), 0, exp.log())
        events = []
        for line in exp.log_lines:
            self.assertTrue(line.endswith("}\n"), line)
            event = json.loads(line)
            self.assertEqual(list(event)[:3], ["ts", "level", "msg"], line)
            self.assertRegex(event["ts"], TS)
            self.assertIn(event["level"], ("debug", "info", "warn", "error"))
            self.assertTrue(all(isinstance(v, str) for v in event.values()), line)
            events.append(event)
        by_msg = {e["msg"]: e for e in events}
        listening = by_msg["listening on"]
        self.assertEqual((listening["level"], listening["address"], listening["tls"]),
                         ("info", f"127.0.0.1:{exp.port}", "false"))
        failed = by_msg["collector failed"]
        self.assertEqual((failed["level"], failed["collector"]), ("warn", "sysfs"))
        # The kernel's name comes back byte for byte once the JSON is decoded.
        self.assertIn("/" + ODD_NAME + "/", failed["err"])
        rejected = by_msg["reload rejected"]
        self.assertEqual(rejected["level"], "error")
        self.assertIn(":2:20: web.max_connections: expected an integer", rejected["err"])
        self.assertEqual(events[-1]["msg"], "stopped")

    def test_bad_format_is_a_usage_error(self):
        r = subprocess.run([BIN, "--log.format=text"], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn('log.format: expected logfmt or json, got "text"', r.stderr)
        r = subprocess.run([BIN, "--config.check", write_config("log: {format: xml}\n")],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn('log.format: expected logfmt or json, got "xml"', r.stderr)


class LogfmtTest(unittest.TestCase):
    def test_control_characters_in_a_device_name_stay_on_one_escaped_line(self):
        with Exporter("--path.sysfs", odd_sysfs(), "--no-collector.pcie") as exp:
            scrape(exp.port)
            wait_log(exp, 'msg="collector failed"')
            self.assertEqual(exp.stop(), 0, exp.log())
        failed = [l for l in exp.log_lines if 'msg="collector failed"' in l]
        self.assertEqual(len(failed), 1, exp.log())
        line = failed[0]
        self.assertTrue(line.startswith("ts="), line)
        self.assertEqual(line.count("\n"), 1, repr(line))
        self.assertNotIn("\t", line)
        self.assertNotIn("\x1b", line)
        self.assertNotIn("\r", line)
        self.assertIn("/bro\\tken\\x1b[31m\\n0/", line)
        fields = parse_logfmt(line.rstrip("\n"))
        self.assertEqual(list(fields)[:3], ["ts", "level", "msg"])
        self.assertEqual((fields["level"], fields["msg"], fields["collector"]),
                         ("warn", '"collector failed"', "sysfs"))
        self.assertRegex(fields["ts"], TS)
        for line in exp.log_lines:
            parse_logfmt(line.rstrip("\n"))


class JournalPrefixTest(unittest.TestCase):
    """systemd sets JOURNAL_STREAM=<dev>:<ino> of the stream it hands over as
    stderr; here stderr is a file and the variable names it, or not."""

    def run_daemon(self, journal_stream_of):
        out = tempfile.NamedTemporaryFile(prefix="rdma_log_", mode="w+")
        st = os.fstat(out.fileno())
        env = dict(os.environ)
        env["JOURNAL_STREAM"] = journal_stream_of(st)
        proc = subprocess.Popen([BIN, "--web.listen-address", "127.0.0.1:0",
                                 "--path.sysfs", make_sysfs("broken")],
                                stdout=subprocess.DEVNULL, stderr=out, env=env)
        try:
            port = self.wait_for(out, lambda text: LISTENING.search(text))
            scrape(int(port.group(1)))
            self.wait_for(out, lambda text: "collector failed" in text)
        finally:
            proc.send_signal(signal.SIGTERM)
            self.assertEqual(proc.wait(20), 0)
        out.seek(0)
        return out.read().splitlines()

    def wait_for(self, out, found, timeout=15):
        deadline = time.monotonic() + timeout
        while True:
            out.seek(0)
            text = out.read()
            if (m := found(text)):
                return m
            self.assertLess(time.monotonic(), deadline, text)
            time.sleep(0.05)

    def test_prefix_when_stderr_is_the_journal_stream(self):
        lines = self.run_daemon(lambda st: f"{st.st_dev}:{st.st_ino}")
        priorities = {"debug": "<7>", "info": "<6>", "warn": "<4>", "error": "<3>"}
        levels = set()
        for line in lines:
            m = re.match(r"^(<\d>)ts=\S+ level=(\w+) ", line)
            self.assertIsNotNone(m, line)
            self.assertEqual(m.group(1), priorities[m.group(2)], line)
            levels.add(m.group(2))
        self.assertEqual(levels, {"info", "warn"}, lines)

    def test_no_prefix_when_the_journal_stream_is_another_file(self):
        lines = self.run_daemon(lambda st: f"{st.st_dev}:{st.st_ino + 1}")
        self.assertTrue(lines)
        for line in lines:
            self.assertRegex(line, r"^ts=\S+ level=\w+ ")


if __name__ == "__main__":
    unittest.main()
