'use strict';
// A test OTLP/HTTP metrics receiver. It decodes every POST with the
// OpenTelemetry JS project's generated protobuf code (not the exporter's),
// answers as told, and appends one JSON line per request to --out.
//
//   node receiver.js --out FILE [--script 503,503] [--then 200|400|503|hang]
//                    [--retry-after SECONDS]
//                    [--tls-cert PEM --tls-key PEM [--client-ca PEM]]
//
// --script: statuses for the first requests, in order; --then: the answer
// to every later one ("hang": read the request and never answer).
// --tls-cert/--tls-key: HTTPS with this certificate chain and key;
// --client-ca: also require a client certificate signed by this CA (mutual
// TLS). Each record then says which client certificate came (its subject
// CN), and failed handshakes are appended as {"tls_error": ...} lines.
// Prints "listening PORT" on stdout once it accepts connections on
// 127.0.0.1 (an ephemeral port).

const crypto = require('crypto');
const fs = require('fs');
const http = require('http');
const https = require('https');
const zlib = require('zlib');

const root = require('@opentelemetry/otlp-transformer/build/src/generated/root.js');
const Request = root.opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest;
const TO_OBJECT = { longs: String, enums: Number, arrays: true, defaults: false };

function parseArgs(argv) {
  const args = {
    out: null, script: [], then: '200', retryAfter: null, tlsCert: null, tlsKey: null,
    clientCa: null,
  };
  for (let i = 0; i < argv.length; i += 2) {
    const [key, value] = [argv[i], argv[i + 1]];
    if (key === '--out') args.out = value;
    else if (key === '--script') args.script = value.split(',').filter((s) => s !== '');
    else if (key === '--then') args.then = value;
    else if (key === '--retry-after') args.retryAfter = value;
    else if (key === '--tls-cert') args.tlsCert = value;
    else if (key === '--tls-key') args.tlsKey = value;
    else if (key === '--client-ca') args.clientCa = value;
    else throw new Error('unknown argument ' + key);
  }
  if (!args.out) throw new Error('--out is required');
  return args;
}

function decode(headers, body) {
  const encoding = headers['content-encoding'] || '';
  if (encoding === 'gzip') body = zlib.gunzipSync(body);
  else if (encoding !== '') throw new Error('unexpected content-encoding ' + encoding);
  const type = headers['content-type'] || '';
  if (type === 'application/x-protobuf') {
    return { decoded: Request.toObject(Request.decode(body), TO_OBJECT) };
  }
  if (type === 'application/json') {
    const raw = JSON.parse(body.toString('utf8'));
    return { raw, decoded: Request.toObject(Request.fromObject(raw), TO_OBJECT) };
  }
  throw new Error('unexpected content-type ' + type);
}

const args = parseArgs(process.argv.slice(2));
let served = 0;
const hanging = [];

function handle(req, res) {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const answer = served < args.script.length ? args.script[served] : args.then;
    served += 1;
    const record = {
      n: served,
      at: Date.now() / 1000,
      method: req.method,
      url: req.url,
      headers: req.headers,
      bytes: body.length,
      sha1: crypto.createHash('sha1').update(body).digest('hex'),
      answer,
    };
    if (args.tlsCert) {
      const peer = req.socket.getPeerCertificate();
      record.tls = {
        protocol: req.socket.getProtocol(),
        servername: req.socket.servername || null,
        client_cn: peer && peer.subject ? peer.subject.CN : null,
      };
    }
    try {
      Object.assign(record, decode(req.headers, body));
    } catch (e) {
      record.error = String(e && e.message ? e.message : e);
    }
    fs.appendFileSync(args.out, JSON.stringify(record) + '\n');
    if (answer === 'hang') {
      hanging.push(res);  // never answered; closed when the client gives up
      return;
    }
    const status = record.error ? 400 : Number(answer);
    const headers = { 'Content-Type': 'application/json' };
    if (args.retryAfter !== null && (status === 429 || status === 503)) {
      headers['Retry-After'] = args.retryAfter;
    }
    res.writeHead(status, headers);
    res.end(status === 200 ? '{}' : JSON.stringify({ code: 3, message: record.error || 'test' }));
  });
}

let server;
if (args.tlsCert) {
  const options = {
    cert: fs.readFileSync(args.tlsCert),
    key: fs.readFileSync(args.tlsKey),
  };
  if (args.clientCa) {
    options.ca = fs.readFileSync(args.clientCa);
    options.requestCert = true;
    options.rejectUnauthorized = true;
  }
  server = https.createServer(options, handle);
  server.on('tlsClientError', (err) => {
    const line = { tls_error: String(err && err.code ? err.code : err), at: Date.now() / 1000 };
    fs.appendFileSync(args.out, JSON.stringify(line) + '\n');
  });
} else {
  server = http.createServer(handle);
}
server.requestTimeout = 0;
server.headersTimeout = 0;
server.keepAliveTimeout = 1000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write('listening ' + server.address().port + '\n');
});
process.on('SIGTERM', () => process.exit(0));
