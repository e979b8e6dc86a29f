"""sysfs files kept open between scrapes: a device that goes away and comes
back, and a process whose open-file limit leaves no room to keep them all."""
import os
import shutil
import stat
import tempfile
import unittest
import urllib.request

from harness import BIN, Exporter, make_sysfs, value

# Only the sysfs collector: this machine has no rdma netlink, the
# hw_counters collector would read the ports' hw_counters/ from sysfs too, and
# the pcie collector its devices' PCI function files.
CONFIG = ("collection: {max_age: 0s}\n"
          "collectors: {devices: false, hw_counters: false, resources: false, pcie: false}\n")


def scrape(exporter):
    with urllib.request.urlopen(f"http://127.0.0.1:{exporter.port}/metrics", timeout=10) as r:
        return r.read().decode()


def pma(text, name, device, port):
    return value(text, f"rdma_port_pma_{name}", f'{{device="{device}",port="{port}"}}')


class SysfsFilesTest(unittest.TestCase):
    def test_device_that_goes_and_comes_back_with_files_held(self):
        root = make_sysfs("mlx5:2:1")
        cls = os.path.join(root, "class", "infiniband")
        with Exporter("--path.sysfs", root, config=CONFIG) as e:
            text = scrape(e)
            # fixture value of mlx5_1 port 1: (sum of the name's bytes) * 1000 + 100 + 10
            self.assertEqual(pma(text, "port_xmit_packets_total", "mlx5_1", 1), 1840110)
            # 27 files a device: 4 identity files, rate, link_layer, 21 PMA counters.
            self.assertEqual(value(text, "rdma_exporter_sysfs_open_files"), 54)
            self.assertEqual(value(text, "rdma_exporter_sysfs_uncached_files"), 0)

            away = os.path.join(root, "mlx5_1.away")
            os.rename(os.path.join(cls, "mlx5_1"), away)
            text = scrape(e)
            self.assertIsNone(pma(text, "port_xmit_packets_total", "mlx5_1", 1))
            self.assertEqual(pma(text, "port_xmit_packets_total", "mlx5_0", 1), 1840010)
            self.assertEqual(value(text, "rdma_exporter_sysfs_open_files"), 27)
            self.assertEqual(value(text, 'rdma_exporter_collector_success{collector="sysfs"}'), 1)

            # Back with other values, in new files (a held file would read the old one).
            counters = os.path.join(away, "ports", "1", "counters")
            for name, v in (("port_xmit_packets", "4242"), ("symbol_error", "7")):
                with open(os.path.join(counters, name + ".new"), "w") as f:
                    f.write(v + "\n")
                os.replace(os.path.join(counters, name + ".new"), os.path.join(counters, name))
            os.rename(away, os.path.join(cls, "mlx5_1"))
            text = scrape(e)
            self.assertEqual(pma(text, "port_xmit_packets_total", "mlx5_1", 1), 4242)
            self.assertEqual(pma(text, "symbol_error_total", "mlx5_1", 1), 7)
            self.assertEqual(value(text, "rdma_exporter_sysfs_open_files"), 54)
            self.assertEqual(value(text, 'rdma_exporter_collector_success{collector="sysfs"}'), 1)
        shutil.rmtree(root)

    def test_open_file_budget_exhausted_falls_back_to_open_read_close(self):
        # Soft and hard limit 300: the budget is what is left after a
        # reserve of 256 files, 44 files; the tree has 8 x 2 ports, 400 files.
        root = make_sysfs("mlx5:8:2")
        wrap_dir = tempfile.mkdtemp(prefix="rdma_nofile_")
        wrapper = os.path.join(wrap_dir, "rdma_exporter")
        with open(wrapper, "w") as f:
            f.write(f'#!/bin/sh\nexec prlimit --nofile=300:300 {os.path.abspath(BIN)} "$@"\n')
        os.chmod(wrapper, stat.S_IRWXU)
        with Exporter("--path.sysfs", root, config=CONFIG, binary=wrapper) as e:
            for _ in range(2):
                text = scrape(e)
                self.assertEqual(value(text, "rdma_exporter_sysfs_open_files"), 44)
                self.assertEqual(value(text, "rdma_exporter_sysfs_uncached_files"), 356)
                # Values read either way are right: the first device's (kept)
                # and the last one's (read with open/read/close).
                self.assertEqual(pma(text, "port_xmit_packets_total", "mlx5_0", 1), 1840010)
                self.assertEqual(pma(text, "port_xmit_packets_total", "mlx5_7", 2), 1840720)
                self.assertEqual(
                    value(text, 'rdma_exporter_collector_success{collector="sysfs"}'), 1)
                self.assertEqual(
                    sum(1 for line in text.splitlines()
                        if line.startswith("rdma_port_pma_")), 8 * 2 * 21)
        shutil.rmtree(root)
        shutil.rmtree(wrap_dir)


if __name__ == "__main__":
    unittest.main()
