"""Runs the rdma_exporter binary as a black box for the integration tests."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

BIN = os.environ.get("RDMA_EXPORTER_BIN", "../../build/rdma_exporter")
# The exporter's collection and HTTP server in front of the fake nldev kernel
# (tests/fake_kernel/fake_host.cpp).
FAKE_HOST_BIN = os.environ.get("RDMA_FAKE_HOST_BIN", "../../build/tests/fake_rdma_host")
SOURCE_DIR = os.environ.get("RDMA_EXPORTER_SOURCE_DIR",
                            os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
# A node's CRI and pod-resources servers (tests/support/fake_node_api_main.cpp).
FAKE_NODE_API_BIN = os.environ.get("RDMA_FAKE_NODE_API_BIN",
                                   os.path.join(SOURCE_DIR, "build", "tests",
                                                "fake_node_api_server"))
# Writes fake sysfs trees (tests/support/sysfs_tree.hpp).
SYSFS_TREE_BIN = os.environ.get("RDMA_SYSFS_TREE_BIN",
                                os.path.join(SOURCE_DIR, "build", "tests", "sysfs_tree"))


# The line that says where the daemon listens, in logfmt or JSON:
#   ... msg="listening on" address=127.0.0.1:10910 tls=false ...
#   ... "msg":"listening on","address":"127.0.0.1:10910","tls":"false" ...
LISTENING = re.compile(r"listening on\b.*\baddress\W{1,3}\S*?:(\d+)[\"\s]")


def make_sysfs(specs):
    """A fake sysfs tree written by the sysfs_tree tool, e.g. "mlx5:1:2 rxe";
    returns its root."""
    root = tempfile.mkdtemp(prefix="rdma_sysfs_")
    subprocess.run([SYSFS_TREE_BIN, root] + specs.split(), check=True)
    return root


def add_netdevs(root, netdevs):
    """Carrier files below root/class/net: {name: (carrier, up count, down
    count)}, as the link collector reads them."""
    for name, values in netdevs.items():
        net = os.path.join(root, "class", "net", name)
        os.makedirs(net)
        for file, value in zip(("carrier", "carrier_up_count", "carrier_down_count"), values):
            with open(os.path.join(net, file), "w") as f:
                f.write(f"{value}\n")
    return root


# The netdevs of fake_rdma_host's RoCE ports, each file of its own value.
FAKE_HOST_NETDEVS = {"ens1f0": (1, 3, 2), "ens1f1": (0, 5, 4), "veth0": (1, 1, 0)}


def fixture_counter(root, device, port, name):
    """The value a counter file of a make_sysfs() tree holds, e.g.
    fixture_counter(root, "mlx5_0", 1, "symbol_error")."""
    with open(os.path.join(root, "class", "infiniband", device, "ports", str(port),
                           "counters", name)) as f:
        return int(f.read())


def make_proc(processes):
    """A fake /proc with <pid>/comm and <pid>/cgroup: {pid: (comm, cgroup path)}."""
    root = tempfile.mkdtemp(prefix="rdma_proc_")
    for pid, (comm, cgroup) in processes.items():
        os.makedirs(os.path.join(root, str(pid)))
        with open(os.path.join(root, str(pid), "comm"), "w") as f:
            f.write(comm + "\n")
        with open(os.path.join(root, str(pid), "cgroup"), "w") as f:
            f.write(f"0::{cgroup}\n")
    return root


def write_config(text):
    fd, path = tempfile.mkstemp(suffix=".yml", prefix="rdma_exporter_")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


class NodeApi:
    """A node's CRI and pod-resources servers (fake_node_api_server) on unix
    sockets in a new directory (.cri, .pod_resources), answering STATE:
    {"containers": [{id, pod_uid, namespace, pod, container}],
     "pods": [{namespace, pod, containers: [{name, devices: [{resource, ids}]}]}]}."""

    def __init__(self, state):
        self.dir = tempfile.mkdtemp(prefix="rdma_node_api_")
        self.cri = os.path.join(self.dir, "cri.sock")
        self.pod_resources = os.path.join(self.dir, "kubelet.sock")
        self.state_file = os.path.join(self.dir, "state.yml")
        with open(self.state_file, "w") as f:
            json.dump(state, f)
        self.proc = subprocess.Popen(
            [FAKE_NODE_API_BIN, self.cri, self.pod_resources, self.state_file],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            self.stop()
            raise RuntimeError(f"fake_node_api_server did not start: {line!r} "
                               f"{self.proc.stderr.read()}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
        code = self.proc.wait(20)
        shutil.rmtree(self.dir, ignore_errors=True)
        return code


class Exporter:
    """Starts the daemon on an ephemeral loopback port (or LISTEN) and reads
    its log; PREFIX goes before its command (`ip netns exec NS`)."""

    def __init__(self, *args, config=None, binary=None, listen="127.0.0.1:0", prefix=()):
        cmd = [*prefix, binary or BIN, "--web.listen-address", listen]
        if config is not None:
            cmd += ["--config.file", write_config(config)]
        cmd += list(args)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.log_lines = []
        self._listening = threading.Event()
        self.port = None
        self._reader = threading.Thread(target=self._read_log, daemon=True)
        self._reader.start()
        if not self._listening.wait(15):
            self.stop()
            raise RuntimeError("exporter did not start listening:\n" + self.log())

    def _read_log(self):
        for line in self.proc.stderr:
            self.log_lines.append(line)
            m = LISTENING.search(line)
            if m and self.port is None:
                self.port = int(m.group(1))
                self._listening.set()

    def log(self):
        return "".join(self.log_lines)

    def connect(self, timeout=10):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        return s

    def stop(self, sig=signal.SIGTERM, timeout=20):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._reader.join(5)
        if not self._reader.is_alive():
            self.proc.stderr.close()
        self.proc.stdout.close()
        return code

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def raw_request(port, data, timeout=10):
    """Sends raw bytes, returns everything the server sends until it closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        chunks = []
        while True:
            try:
                b = s.recv(65536)
            except ConnectionResetError:
                break
            if not b:
                break
            chunks.append(b)
        return b"".join(chunks)


def status_of(response):
    m = re.match(rb"HTTP/1\.[01] (\d{3})", response)
    return int(m.group(1)) if m else None


def promtool():
    return shutil.which("promtool")


def value(text, name, labels=""):
    """The value of one sample in exposition text, or None."""
    m = re.search(r"^" + re.escape(name + labels) + r" (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def wait_log(exporter, needle, count=1, timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if exporter.log().count(needle) >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"no {count}x {needle!r} in the log:\n{exporter.log()}")


def stop_process(proc, timeout=30):
    """Terminates PROC (a Popen) if it runs, killing it after TIMEOUT seconds."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def rule_files(config="prometheus.yml"):
    """The rule files config/prometheus/CONFIG loads: every shipped one for
    prometheus.yml."""
    with open(os.path.join(SOURCE_DIR, "config/prometheus", config)) as f:
        return yaml.safe_load(f)["rule_files"]


def as_shard(config, number):
    """CONFIG (prometheus-shard.yml's, loaded) set up as shard NUMBER, as its
    comments say: the hosts whose hash is NUMBER, its parts labelled so."""
    config["scrape_configs"][0]["relabel_configs"][1]["regex"] = str(number)
    config["remote_write"][0]["write_relabel_configs"][0]["replacement"] = str(number)
    return config


def free_port():
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_culprit_evaluator_keep():
    """The regex prometheus-shard.yml's comment gives the shards' one
    remote_write to an evaluator of every rail (rdma-culprits.yml)."""
    with open(os.path.join(SOURCE_DIR, "config/prometheus/prometheus-shard.yml")) as f:
        (regex,) = re.findall(r'^\s*#\s+regex: "([^"]+)"$', f.read(), re.M)
    return regex


class Server:
    """A server process on loopback, its output in a log, stopped by stop().

    Without WORKDIR it runs in a temporary directory of its own ("{dir}" in
    ARGV names it; removed by stop()) and logs to "log" there; with one it
    runs there and logs to NAME.log, both kept. With READY it waits until
    that path answers, up to TIMEOUT seconds; if it never does, it is
    stopped before the error is raised (the caller holds no handle to stop
    it by)."""

    def __init__(self, name, argv, ready=None, port=None, timeout=60, workdir=None):
        self.name, self.port = name, port
        self.url = f"http://127.0.0.1:{port}" if port else None
        self.own_dir = workdir is None
        self.dir = tempfile.mkdtemp(prefix=f"rdma_{name}_") if self.own_dir else workdir
        self.log_path = os.path.join(self.dir, "log" if self.own_dir else f"{name}.log")
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen([a.replace("{dir}", self.dir) for a in argv],
                                         stdout=log, stderr=subprocess.STDOUT, cwd=self.dir)
        if ready:
            try:
                self.wait_ready(ready, timeout)
            except BaseException:
                self.stop()
                raise

    def wait_ready(self, path, timeout):
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited {self.proc.returncode}:\n{self.log()}")
            try:
                with urllib.request.urlopen(self.url + path, timeout=5):
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} not ready within {timeout}s:\n{self.log()}")
            time.sleep(0.2)

    def log(self):
        """The last 4,000 characters of its output."""
        with open(self.log_path, errors="replace") as f:
            return f.read()[-4000:]

    def query(self, expr):
        """The Prometheus API's answer to EXPR now, decoded (an error's too)."""
        url = f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        try:
            with urllib.request.urlopen(url, timeout=30) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as e:
            return json.loads(e.read())

    def stop(self, timeout=30):
        stop_process(self.proc, timeout)
        if self.own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)


class Prometheus:
    """Debian's Prometheus server on loopback, with a data directory of its own.

    `config` is the prometheus.yml text; files maps extra file names (rule
    files) to their text, written next to it; args are more flags."""

    def __init__(self, config, files=None, timeout=60, args=()):
        self.dir = tempfile.mkdtemp(prefix="rdma_prometheus_")
        for name, text in {"prometheus.yml": config, **(files or {})}.items():
            with open(os.path.join(self.dir, name), "w") as f:
                f.write(text)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = os.path.join(self.dir, "prometheus.log")
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(
                [shutil.which("prometheus") or "/usr/bin/prometheus",
                 "--config.file", os.path.join(self.dir, "prometheus.yml"),
                 "--storage.tsdb.path", os.path.join(self.dir, "data"),
                 "--web.listen-address", f"127.0.0.1:{self.port}",
                 "--log.level", "warn", *args],
                stdout=log, stderr=subprocess.STDOUT, cwd=self.dir)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited {self.proc.returncode}:\n{self.log()}")
            try:
                if self.get("/-/ready", raw=True).startswith(b"Prometheus Server is Ready"):
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"prometheus not ready within {timeout}s:\n{self.log()}")
            time.sleep(0.2)

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def get(self, path, params=None, raw=False):
        """GET an API path; the decoded JSON (or the raw body). HTTP errors of
        the query API come back as their JSON body (status "error")."""
        url = self.url + path
        if params:
            url += "?" + urllib.parse.urlencode(params, doseq=True)
        try:
            with urllib.request.urlopen(url, timeout=30) as resp:
                body = resp.read()
        except urllib.error.HTTPError as e:
            body = e.read()
            if raw or not body.startswith(b"{"):
                raise
        return body if raw else json.loads(body)

    def query(self, expr, at=None):
        params = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        return self.get("/api/v1/query", params)

    def stop(self):
        stop_process(self.proc)
        shutil.rmtree(self.dir, ignore_errors=True)
