// pgarena's k6 scenario: one request shape, closed model (constant VUs), machine-readable summary.
// Everything comes from PGARENA_* environment variables set by pgarena's k6 adapter.
import http from 'k6/http';
import { Counter } from 'k6/metrics';

const ok = new Counter('pgarena_2xx');
const non2xx = new Counter('pgarena_non_2xx');
const connectErrors = new Counter('pgarena_connect_errors');
const timeouts = new Counter('pgarena_timeouts');
const otherErrors = new Counter('pgarena_other_errors');

const method = __ENV.PGARENA_METHOD || 'GET';
const url = __ENV.PGARENA_URL;
const body = __ENV.PGARENA_BODY || null;
const params = {
  timeout: __ENV.PGARENA_TIMEOUT || '10s',
  headers: __ENV.PGARENA_CONTENT_TYPE ? { 'Content-Type': __ENV.PGARENA_CONTENT_TYPE } : {},
};

export const options = {
  discardResponseBodies: true,
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(50)', 'p(90)', 'p(95)', 'p(99)'],
  scenarios: {
    load: {
      executor: 'constant-vus',
      vus: Number(__ENV.PGARENA_VUS || 1),
      duration: __ENV.PGARENA_DURATION || '5s',
      gracefulStop: '0s',
    },
  },
};

export default function () {
  const res = http.request(method, url, body, params);
  // A response with a status is an answer (k6 also sets error_code 1400-1599 for 4xx/5xx); without a
  // status, k6's error codes tell the kind: 1050 request timeout, 1200-1299 TCP (dial, refused, reset).
  // Requests cut off when the window closes never reach these lines: they are not counted, as in oha.
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
  return { [__ENV.PGARENA_SUMMARY]: JSON.stringify(data) };
}
