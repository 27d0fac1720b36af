// pgarena's k6 scenario: one request shape (a random one of the cell's variant URLs, a random tx body),
// closed model (constant VUs) or open model (constant arrival rate when PGARENA_RATE is set),
// machine-readable summary.
// Everything comes from PGARENA_* environment variables set by pgarena's k6 adapter.
import http from 'k6/http';
import exec from 'k6/execution';
import { SharedArray } from 'k6/data';
import { Counter, Trend } from 'k6/metrics';

const ok = new Counter('pgarena_2xx');
const non2xx = new Counter('pgarena_non_2xx');
const connectErrors = new Counter('pgarena_connect_errors');
const timeouts = new Counter('pgarena_timeouts');
const otherErrors = new Counter('pgarena_other_errors');
// Latency of every classified request; one without an answer (no status) counts at the timeout at
// least, as pgarena does for oha (src/pgarena/engines/latency.py).
const latency = new Trend('pgarena_latency', true);

const method = __ENV.PGARENA_METHOD || 'GET';
const url = __ENV.PGARENA_URL;
// The cell's request variants, one absolute URL per line: each iteration picks one at random.
const urls = __ENV.PGARENA_URLS_FILE
  ? new SharedArray('urls', () => open(__ENV.PGARENA_URLS_FILE).split('\n').filter((line) => line))
  : null;
const body = __ENV.PGARENA_BODY || null;
// tx: one pre-generated body per line, each iteration picks one at random.
const bodies = __ENV.PGARENA_BODIES_FILE
  ? new SharedArray('bodies', () => open(__ENV.PGARENA_BODIES_FILE).split('\n').filter((line) => line))
  : null;
const timeout = __ENV.PGARENA_TIMEOUT || '10000ms';
const timeoutMs = timeout.endsWith('ms') ? Number(timeout.slice(0, -2)) : Number(timeout.slice(0, -1)) * 1000;
const params = {
  timeout: timeout,
  headers: __ENV.PGARENA_CONTENT_TYPE ? { 'Content-Type': __ENV.PGARENA_CONTENT_TYPE } : {},
};
// Answers are checked by pgarena's sampler beside k6 (checks.py), with k6's own headers; the script
// discards every body.

const vus = Number(__ENV.PGARENA_VUS || 1);
const duration = __ENV.PGARENA_DURATION || '5s';
// In-flight requests finish when the window closes and are counted (tx: one 200 = one commit).
const scenario = __ENV.PGARENA_RATE
  ? {
      // Open model: iterations start on schedule; one that finds no free VU is dropped (dropped_iterations).
      executor: 'constant-arrival-rate',
      rate: Number(__ENV.PGARENA_RATE),
      timeUnit: '1s',
      duration: duration,
      preAllocatedVUs: vus,
      maxVUs: vus,
      gracefulStop: timeout,
    }
  : { executor: 'constant-vus', vus: vus, duration: duration, gracefulStop: timeout };

export const options = {
  discardResponseBodies: true,
  // p(99.5) and above: where p99 falls once dropped iterations are counted after every request (k6.py)
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(50)', 'p(90)', 'p(95)', 'p(99)', 'p(99.5)', 'p(99.9)',
    'p(99.99)', 'count'],
  scenarios: { load: scenario },
};

export default function () {
  const payload = bodies ? bodies[Math.floor(Math.random() * bodies.length)] : body;
  const target = urls ? urls[Math.floor(Math.random() * urls.length)] : url;
  const res = http.request(method, target, payload, params);
  // A response with a status is an answer (k6 also sets error_code 1400-1599 for 4xx/5xx); without a
  // status, k6's error codes tell the kind: 1050 request timeout, 1200-1299 TCP (dial, refused, reset).
  // Windows end with a graceful stop, so requests in flight are awaited and counted here.
  latency.add(res.status > 0 ? res.timings.duration : Math.max(res.timings.duration, timeoutMs));
  if (res.status >= 200 && res.status < 300) {
    ok.add(1);
  } else if (res.status > 0) {
    non2xx.add(1);
  } else if (res.error_code === 1050) {
    timeouts.add(1);
  } else if (res.error_code >= 1200 && res.error_code < 1300) {
    connectErrors.add(1);
  } else {
    otherErrors.add(1);
  }
}

export function handleSummary(data) {
  // What ran, for `pgarena ingest` (k6-operator outputs): every PGARENA_* setting and this process's
  // execution segment (null when it ran the whole test).
  const settings = {};
  for (const key of Object.keys(__ENV)) {
    if (key.startsWith('PGARENA_')) settings[key] = __ENV[key];
  }
  data.pgarena = {
    settings: settings,
    segment: exec.test.options.executionSegment || null,
    sequence: exec.test.options.executionSegmentSequence || null,
  };
  return { [__ENV.PGARENA_SUMMARY]: JSON.stringify(data) };
}
