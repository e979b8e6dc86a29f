"""TLS and basic auth of the HTTP endpoint (--web.config.file), checked with
curl and openssl s_client against certificates made here with openssl."""
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import unittest

from harness import BIN, Exporter, make_sysfs, raw_request, value, wait_log

PASSWORD = "correct horse battery"
D = None  # the directory with every certificate, made once for the module


def openssl(*args, stdin=None):
    r = subprocess.run(["openssl", *args], input=stdin, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)}: {r.stderr}")
    return r.stdout


def path(name):
    return os.path.join(D, name)


def make_ca(name):
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", path(name + ".key"), "-out", path(name + ".pem"), "-days", "2",
            "-subj", "/CN=" + name)


def make_leaf(name, ca, ext, expired=False):
    """A key and a certificate signed by `ca`; expired ones through `openssl ca`,
    which can backdate the validity period."""
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", path(name + ".key"), "-out", path(name + ".csr"), "-subj", "/CN=" + name)
    with open(path(name + ".ext"), "w") as f:
        f.write(ext + "\n")
    if not expired:
        openssl("x509", "-req", "-in", path(name + ".csr"), "-CA", path(ca + ".pem"),
                "-CAkey", path(ca + ".key"), "-CAcreateserial", "-days", "2",
                "-extfile", path(name + ".ext"), "-out", path(name + ".pem"))
        return
    db = path("ca-db")
    os.makedirs(db, exist_ok=True)
    open(os.path.join(db, "index.txt"), "w").close()
    with open(os.path.join(db, "serial"), "w") as f:
        f.write("1000\n")
    with open(path("ca.cnf"), "w") as f:
        f.write(f"""[ca]
default_ca = test
[test]
database = {db}/index.txt
serial = {db}/serial
new_certs_dir = {db}
default_md = sha256
policy = any
unique_subject = no
[any]
commonName = supplied
""")
    openssl("ca", "-batch", "-config", path("ca.cnf"), "-cert", path(ca + ".pem"),
            "-keyfile", path(ca + ".key"), "-in", path(name + ".csr"), "-out", path(name + ".pem"),
            "-startdate", "20200101000000Z", "-enddate", "20200102000000Z",
            "-extfile", path(name + ".ext"), "-notext")


def fingerprint(pem_text):
    return openssl("x509", "-noout", "-fingerprint", "-sha256", stdin=pem_text).strip()


def setUpModule():
    global D
    D = tempfile.mkdtemp(prefix="rdma_tls_")
    make_ca("ca")
    make_ca("wrong-ca")
    server = "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth"
    client = "extendedKeyUsage=clientAuth"
    make_leaf("server", "ca", server)
    make_leaf("server2", "ca", server)
    make_leaf("client", "ca", client)
    make_leaf("client-expired", "ca", client, expired=True)
    make_leaf("client-wrong-ca", "wrong-ca", client)
    # client_allowed_sans: one client per kind of name, and one named otherwise.
    make_leaf("client-dns", "ca", client + "\nsubjectAltName=DNS:scraper.example")
    make_leaf("client-ip", "ca", client + "\nsubjectAltName=IP:192.0.2.7")
    make_leaf("client-email", "ca", client + "\nsubjectAltName=email:prom@example.org")
    make_leaf("client-uri", "ca", client + "\nsubjectAltName=URI:spiffe://example.org/prom")
    make_leaf("client-other", "ca", client + "\nsubjectAltName=DNS:intruder.example,IP:192.0.2.8")
    make_leaf("client-wrong-ca-dns", "wrong-ca", client + "\nsubjectAltName=DNS:scraper.example")
    assert "notAfter=Jan  2 00:00:00 2020 GMT" in openssl(
        "x509", "-noout", "-enddate", "-in", path("client-expired.pem"))


def tearDownModule():
    shutil.rmtree(D, ignore_errors=True)


def bcrypt_hash(password):
    """What an operator runs: htpasswd (Apache's bcrypt, $2y$)."""
    out = subprocess.run(["htpasswd", "-nbBC", "5", "", password], capture_output=True, text=True,
                         check=True).stdout
    return out.strip().lstrip(":")


def curl(port, path_="/metrics", *args, scheme="https", ca="ca.pem"):
    """Returns (curl exit code, HTTP status or 0, headers + body)."""
    cmd = ["curl", "-sS", "-i", "--max-time", "10", "-w", "\n%{http_code}"]
    if scheme == "https" and ca:
        cmd += ["--cacert", path(ca)]
    r = subprocess.run(cmd + list(args) + [f"{scheme}://127.0.0.1:{port}{path_}"],
                       capture_output=True, text=True, timeout=30)
    body, _, code = r.stdout.rpartition("\n")
    return r.returncode, int(code or 0), body + r.stderr


def s_client(port, *args):
    r = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}",
                        "-CAfile", path("ca.pem"), "-verify_return_error", *args],
                       input="", capture_output=True, text=True, timeout=30)
    return r.returncode, r.stdout + r.stderr


class TlsTestCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sysfs = make_sysfs("mlx5:1:1")

    def start(self, web, config="", *args):
        """An exporter with this web configuration file (in the certificate
        directory, so relative names resolve there)."""
        fd, web_path = tempfile.mkstemp(suffix=".yml", prefix="web_", dir=D)
        with os.fdopen(fd, "w") as f:
            f.write(web)
        self.web_path = web_path
        exp = Exporter("--web.config.file", web_path, "--log.level", "debug", *args,
                       config=f"collection: {{max_age: 0s}}\nsysfs: {{root: {self.sysfs}}}\n"
                              + config)
        self.addCleanup(self.stopped_cleanly, exp)
        # A scrape sharing the first collection, still in flight, would show
        # the HTTP counters from before the test's connections.
        wait_log(exp, "first collection done; ready")
        return exp

    def stopped_cleanly(self, exp):
        # SIGTERM exits 0; a sanitizer report would not.
        code = exp.stop()
        self.assertEqual(code, 0, exp.log()[-4000:])
        self.assertNotIn("Sanitizer", exp.log())

    def metrics(self, exp, *curl_args):
        code, status, text = curl(exp.port, "/metrics", *curl_args)
        self.assertEqual((code, status), (0, 200), text)
        return text

    def failures(self, exp, reason, *curl_args):
        return value(self.metrics(exp, *curl_args), "rdma_exporter_http_tls_handshake_failures_total",
                     f'{{reason="{reason}"}}')


TLS = "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n"


class ServerTlsTest(TlsTestCase):
    def test_tls12_and_tls13_serve_metrics(self):
        exp = self.start(TLS)
        self.assertRegex(exp.log(), r"listening on\" address=127\.0\.0\.1:\d+ tls=true")
        for flags in (["--tlsv1.2", "--tls-max", "1.2"], ["--tlsv1.3", "--tls-max", "1.3"]):
            text = self.metrics(exp, "-v", *flags)
            self.assertIn("rdma_exporter_build_info", text)
            self.assertIn('rdma_port_pma_port_xmit_data_bytes_total{device="mlx5_0",port="1"}', text)
        for flag, name in (("-tls1_2", "TLSv1.2"), ("-tls1_3", "TLSv1.3")):
            code, out = s_client(exp.port, flag)
            self.assertEqual(code, 0, out)
            self.assertIn(f"New, {name}, Cipher is", out)
            self.assertIn("Verify return code: 0 (ok)", out)

    def test_tls10_and_tls11_are_refused(self):
        exp = self.start(TLS)
        before = self.failures(exp, "protocol")
        for flag in ("-tls1", "-tls1_1"):
            # SECLEVEL=0 so that the client really offers the old version.
            code, out = s_client(exp.port, flag, "-cipher", "DEFAULT:@SECLEVEL=0")
            self.assertNotEqual(code, 0, out)
            self.assertIn("alert protocol version", out)
        self.assertEqual(self.failures(exp, "protocol"), before + 2)

    def test_plain_http_to_the_tls_port_gets_no_http_answer(self):
        exp = self.start(TLS)
        reply = raw_request(exp.port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertNotIn(b"HTTP/", reply)
        self.assertNotIn(b"rdma_", reply)
        code, status, _ = curl(exp.port, "/metrics", scheme="http")
        self.assertNotEqual(code, 0)
        self.assertEqual(status, 0)
        self.assertEqual(self.failures(exp, "plain_http"), 2)

    def test_a_client_trusting_another_ca_refuses_the_server(self):
        exp = self.start(TLS)
        code, status, text = curl(exp.port, "/metrics", ca="wrong-ca.pem")
        self.assertEqual(code, 60, text)  # peer certificate cannot be authenticated
        self.assertEqual(status, 0)
        r = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{exp.port}",
                            "-CAfile", path("wrong-ca.pem"), "-verify_return_error"],
                           input="", capture_output=True, text=True, timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("unable to get local issuer certificate", r.stdout + r.stderr)

    def test_the_handshake_has_a_timeout(self):
        # The shorter of web.read_timeout and web.header_timeout.
        for web in ("{read_timeout: 1s}", "{header_timeout: 1s, read_timeout: 30s}"):
            exp = self.start(TLS, f"web: {web}\n")
            with socket.create_connection(("127.0.0.1", exp.port), timeout=10) as s:
                start = time.monotonic()
                self.assertEqual(s.recv(100), b"", web)  # closed by the server, nothing sent
                self.assertLess(time.monotonic() - start, 8)
            self.assertEqual(self.failures(exp, "timeout"), 1)

    def test_past_the_per_address_limit_the_oldest_handshake_is_closed_without_plain_text(self):
        # The address's second connection takes the place of its first, which
        # is still in its handshake: that one is closed without a byte.
        exp = self.start(TLS, "web: {max_connections_per_source: 1, header_timeout: 60s, "
                              "read_timeout: 60s}\n")
        with socket.create_connection(("127.0.0.1", exp.port), timeout=10,
                                      source_address=("127.0.0.2", 0)) as first:
            with socket.create_connection(("127.0.0.1", exp.port), timeout=10,
                                          source_address=("127.0.0.2", 0)):
                try:
                    reply = first.recv(100)
                except ConnectionResetError:
                    reply = b""
                self.assertEqual(reply, b"")
                # Another address is served meanwhile.
                text = self.metrics(exp)
        self.assertEqual(value(text, "rdma_exporter_http_evicted_connections_total",
                               '{reason="tls_handshake"}'), 1)
        self.assertEqual(value(text, "rdma_exporter_http_rejected_connections_total",
                               '{reason="max_connections_per_source"}'), 0)

    def test_at_the_cap_a_handshake_in_progress_makes_room(self):
        exp = self.start(TLS, "web: {max_connections: 1, header_timeout: 60s, read_timeout: 60s}\n")
        with socket.create_connection(("127.0.0.1", exp.port), timeout=10) as waiting:
            text = self.metrics(exp)
            self.assertEqual(waiting.recv(100), b"")  # closed for curl's connection
        self.assertEqual(value(text, "rdma_exporter_http_evicted_connections_total",
                               '{reason="tls_handshake"}'), 1)
        self.assertEqual(self.failures(exp, "other"), 0)  # an eviction is no failed handshake

    def test_sigterm_with_an_idle_tls_connection_exits_at_once(self):
        exp = self.start(TLS, "web: {idle_timeout: 60s}\n")
        ctx = ssl.create_default_context(cafile=path("ca.pem"))
        with socket.create_connection(("127.0.0.1", exp.port), timeout=10) as raw:
            with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
                tls.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                self.assertIn(b"200 OK", tls.recv(4096))
                start = time.monotonic()
                self.assertEqual(exp.stop(signal.SIGTERM), 0)
                self.assertLess(time.monotonic() - start, 10)

    def test_an_invalid_web_configuration_at_start_exits_2(self):
        for web, needle in (("tls_server_config: {cert_file: server.pem}\n", "missing key_file"),
                            ("tls_server_config: {cert_file: server.pem, key_file: client.key}\n",
                             "client.key: "),
                            (TLS + "  min_version: TLS10\n", "TLS10 is not accepted")):
            with open(path("bad-web.yml"), "w") as f:
                f.write(web)
            r = subprocess.run([BIN, "--web.listen-address", "127.0.0.1:0", "--web.config.file",
                                path("bad-web.yml")], capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(needle, r.stderr)
            self.assertNotIn("PRIVATE KEY", r.stderr)
            # --config.check follows web.config_file (relative to the checked file).
            with open(path("check.yml"), "w") as f:
                f.write("web: {config_file: bad-web.yml}\n")
            r = subprocess.run([BIN, "--config.check", path("check.yml")], capture_output=True,
                               text=True, timeout=30)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(needle, r.stderr)
        with open(path("bad-web.yml"), "w") as f:
            f.write(TLS)
        r = subprocess.run([BIN, "--config.check", path("check.yml")], capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)


class ClientCertificateTest(TlsTestCase):
    def start_mode(self, mode, ca=True):
        web = TLS + f"  client_auth_type: {mode}\n"
        if ca:
            web += "  client_ca_file: ca.pem\n"
        return self.start(web)

    def with_cert(self, exp, name):
        return curl(exp.port, "/healthz", "--cert", path(name + ".pem"), "--key", path(name + ".key"))

    def test_require_and_verify(self):
        exp = self.start_mode("RequireAndVerifyClientCert")
        code, status, text = self.with_cert(exp, "client")
        self.assertEqual((code, status), (0, 200), text)
        for name in ("client-expired", "client-wrong-ca"):
            code, status, text = self.with_cert(exp, name)
            self.assertNotEqual(code, 0, name + ": " + text)
            self.assertEqual(status, 0, name)
        code, status, text = curl(exp.port, "/healthz")  # no certificate
        self.assertNotEqual(code, 0, text)
        text = self.metrics(exp, "--cert", path("client.pem"), "--key", path("client.key"))
        self.assertEqual(value(text, "rdma_exporter_http_tls_handshake_failures_total",
                               '{reason="client_certificate"}'), 3, text)
        # openssl s_client with the expired certificate: the server's alert names it.
        _, out = s_client(exp.port, "-cert", path("client-expired.pem"), "-key",
                          path("client-expired.key"), "-tls1_2")
        self.assertIn("certificate expired", out)

    def test_verify_if_given(self):
        exp = self.start_mode("VerifyClientCertIfGiven")
        self.assertEqual(curl(exp.port, "/healthz")[:2], (0, 200))
        self.assertEqual(self.with_cert(exp, "client")[:2], (0, 200))
        self.assertNotEqual(self.with_cert(exp, "client-expired")[0], 0)
        self.assertNotEqual(self.with_cert(exp, "client-wrong-ca")[0], 0)

    def test_require_any(self):
        exp = self.start_mode("RequireAnyClientCert", ca=False)
        self.assertNotEqual(curl(exp.port, "/healthz")[0], 0)
        # Any certificate will do (as in Go): the chain is not checked.
        self.assertEqual(self.with_cert(exp, "client-wrong-ca")[:2], (0, 200))


class ClientAllowedSansTest(TlsTestCase):
    SANS = ("  client_allowed_sans: [scraper.example, 192.0.2.7, prom@example.org,"
            " \"spiffe://example.org/prom\"]\n")

    def with_cert(self, exp, name):
        return curl(exp.port, "/healthz", "--cert", path(name + ".pem"), "--key", path(name + ".key"))

    def test_a_client_certificate_must_name_an_allowed_client(self):
        exp = self.start(TLS + "  client_auth_type: RequireAndVerifyClientCert\n"
                         "  client_ca_file: ca.pem\n" + self.SANS)
        for name in ("client-dns", "client-ip", "client-email", "client-uri"):
            code, status, text = self.with_cert(exp, name)
            self.assertEqual((code, status), (0, 200), name + ": " + text)
        # No allowed name, no name at all, or an allowed name from another CA.
        for name in ("client-other", "client", "client-wrong-ca-dns"):
            code, status, text = self.with_cert(exp, name)
            self.assertNotEqual(code, 0, name + ": " + text)
            self.assertEqual(status, 0, name)
        text = self.metrics(exp, "--cert", path("client-dns.pem"), "--key", path("client-dns.key"))
        self.assertEqual(value(text, "rdma_exporter_http_tls_handshake_failures_total",
                               '{reason="client_certificate"}'), 3, text)

    def test_with_require_any_the_names_are_still_checked(self):
        exp = self.start(TLS + "  client_auth_type: RequireAnyClientCert\n" + self.SANS)
        self.assertEqual(self.with_cert(exp, "client-wrong-ca-dns")[:2], (0, 200))
        self.assertNotEqual(self.with_cert(exp, "client-other")[0], 0)

    def test_without_client_certificates_the_list_is_refused(self):
        with open(path("sans.yml"), "w") as f:
            f.write(TLS + self.SANS)
        r = subprocess.run([BIN, "--web.config.file", path("sans.yml"), "--web.listen-address",
                            "127.0.0.1:0"], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("client_allowed_sans needs client certificates", r.stderr)


class RateLimitTest(TlsTestCase):
    def test_a_burst_then_429_then_a_token_per_interval(self):
        # 3 at once, then one every 3s: the requests right after the burst
        # come well within 3s of it.
        exp = self.start("rate_limit:\n  interval: 3s\n  burst: 3\n")
        with socket.create_connection(("127.0.0.1", exp.port), timeout=10) as s:
            f = s.makefile("rb")

            def get(p):
                s.sendall(f"GET {p} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                status = int(f.readline().split()[1])
                length = 0
                while (line := f.readline()) not in (b"\r\n", b""):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                body = f.read(length)
                return status, body

            statuses = [get("/healthz")[0] for _ in range(5)]
            self.assertEqual(statuses, [200, 200, 200, 429, 429])
            status, body = get("/metrics")
            self.assertEqual((status, body), (429, b"Too Many Requests\n"))
            # The bucket refills: a request succeeds again, after some 429s.
            refused = 3
            while True:
                status, body = get("/metrics")
                if status == 200:
                    break
                self.assertEqual(status, 429)
                refused += 1
                time.sleep(0.2)
            self.assertEqual(value(body.decode(), "rdma_exporter_http_requests_total",
                                   '{handler="/healthz",code="429"}'), 2, body)
            self.assertEqual(value(body.decode(), "rdma_exporter_http_requests_total",
                                   '{handler="/metrics",code="429"}'), refused - 2, body)

    def test_rate_limit_errors(self):
        for web, problem in (("rate_limit: {interval: 1s, burst: 0}\n", "rate_limit.burst: must be"),
                             ("rate_limit: {interval: soon, burst: 1}\n", "rate_limit.interval"),
                             ("rate_limit: {burst: -1}\n", "rate_limit.burst"),
                             ("rate_limit: {rate: 1}\n", "rate_limit.rate: unknown key")):
            with open(path("rate.yml"), "w") as f:
                f.write(web)
            r = subprocess.run([BIN, "--web.config.file", path("rate.yml"), "--web.listen-address",
                                "127.0.0.1:0"], capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 2, web + r.stderr)
            self.assertIn(problem, r.stderr, web)


class BasicAuthTest(TlsTestCase):
    def setUp(self):
        self.hash = bcrypt_hash(PASSWORD)

    def check_auth(self, exp, scheme):
        for path_ in ("/metrics", "/healthz", "/", "/nope"):
            code, status, text = curl(exp.port, path_, scheme=scheme)
            self.assertEqual(status, 401, path_ + ": " + text)
            self.assertIn('WWW-Authenticate: Basic realm="rdma_exporter"', text)
            self.assertNotIn("rdma_exporter_build_info", text)
        self.assertEqual(curl(exp.port, "/metrics", "-u", "prom:wrong", scheme=scheme)[1], 401)
        self.assertEqual(curl(exp.port, "/metrics", "-u", "nobody:" + PASSWORD, scheme=scheme)[1],
                         401)
        self.assertEqual(curl(exp.port, "/metrics", "-H", "Authorization: Basic !!!",
                              scheme=scheme)[1], 401)
        for _ in range(3):  # the second and third are answered from memory
            code, status, text = curl(exp.port, "/metrics", "-u", "prom:" + PASSWORD,
                                      scheme=scheme)
            self.assertEqual(status, 200, text)
        self.assertEqual(curl(exp.port, "/nope", "-u", "prom:" + PASSWORD, scheme=scheme)[1], 404)
        self.assertEqual(value(text, "rdma_exporter_http_auth_failures_total",
                               '{reason="missing"}'), 4)
        self.assertEqual(value(text, "rdma_exporter_http_auth_failures_total",
                               '{reason="invalid"}'), 3)
        self.assertEqual(value(text, "rdma_exporter_http_requests_total",
                               '{handler="/metrics",code="401"}'), 4)
        return text

    def test_plain_http(self):
        exp = self.start(f"basic_auth_users:\n  prom: {self.hash}\n")
        self.check_auth(exp, "http")

    def test_over_tls_and_no_secret_in_log_or_metrics(self):
        exp = self.start(TLS + f"basic_auth_users:\n  prom: {self.hash}\n"
                         "http_server_config:\n  headers:\n    X-Frame-Options: deny\n",
                         "web: {enable_lifecycle: true}\n")
        text = self.check_auth(exp, "https")
        self.assertIn("X-Frame-Options: deny", text)
        # A reload through the lifecycle API needs the credentials too.
        self.assertEqual(curl(exp.port, "/-/reload", "-X", "POST")[1], 401)
        self.assertEqual(curl(exp.port, "/-/reload", "-X", "POST", "-u", "prom:" + PASSWORD)[1],
                         200)
        wait_log(exp, "configuration reloaded")
        with open(path("server.key")) as f:
            key_lines = [l for l in f.read().splitlines() if l and "PRIVATE KEY" not in l]
        secrets = [PASSWORD, self.hash, self.hash[7:29]] + key_lines
        text = self.metrics(exp, "-u", "prom:" + PASSWORD)
        exp.stop()
        for secret in secrets:
            self.assertNotIn(secret, exp.log())
            self.assertNotIn(secret, text)
        self.assertIn("basic auth for 1 user(s)", exp.log())


class ReloadTest(TlsTestCase):
    def served_fingerprint(self, port):
        code, out = s_client(port)
        self.assertEqual(code, 0, out)
        pem = re.search(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", out, re.S)
        return fingerprint(pem.group(0))

    def test_sighup_serves_new_certificates_and_keeps_the_old_on_a_broken_file(self):
        for name in ("server", "server2"):
            for ext in (".pem", ".key"):
                shutil.copy(path(name + ext), path("live-" + name + ext))
        web = "tls_server_config:\n  cert_file: live-server.pem\n  key_file: live-server.key\n"
        exp = self.start(web)
        with open(path("server.pem")) as f, open(path("server2.pem")) as g:
            first, second = fingerprint(f.read()), fingerprint(g.read())
        self.assertNotEqual(first, second)
        self.assertEqual(self.served_fingerprint(exp.port), first)

        # New certificate and key, same file names: SIGHUP.
        shutil.copy(path("server2.pem"), path("live-server.pem"))
        shutil.copy(path("server2.key"), path("live-server.key"))
        exp.proc.send_signal(signal.SIGHUP)
        wait_log(exp, "configuration reloaded")
        self.assertEqual(self.served_fingerprint(exp.port), second)

        # A key that does not match: the reload is rejected, the old pair kept.
        shutil.copy(path("server.key"), path("live-server.key"))
        exp.proc.send_signal(signal.SIGHUP)
        wait_log(exp, "reload rejected")
        self.assertIn("live-server.key", exp.log())
        self.assertEqual(self.served_fingerprint(exp.port), second)
        text = self.metrics(exp)
        self.assertEqual(value(text, "rdma_exporter_config_last_reload_successful"), 0)

        # A broken web configuration file: rejected the same way, with its position.
        with open(self.web_path, "w") as f:
            f.write(web + "  min_version: TLS11\n")
        exp.proc.send_signal(signal.SIGHUP)
        wait_log(exp, "reload rejected", count=2)
        self.assertRegex(exp.log(), r"reload rejected\" err=\"\S+web_\w+\.yml:4:16: "
                                    r"tls_server_config\.min_version")

        # Fixed: the reload succeeds again.
        with open(self.web_path, "w") as f:
            f.write(web)
        shutil.copy(path("server2.key"), path("live-server.key"))
        exp.proc.send_signal(signal.SIGHUP)
        wait_log(exp, "configuration reloaded", count=2)
        self.assertEqual(value(self.metrics(exp), "rdma_exporter_config_last_reload_successful"), 1)
        self.assertEqual(self.served_fingerprint(exp.port), second)


if __name__ == "__main__":
    unittest.main()
