-- wrk script for the handler-kit benchmark.
-- Usage: wrk ... -s bench/wrk_post.lua -H 'Name: value' ... URL -- BODY_FILE
-- Sends every request as POST with the body read from BODY_FILE (headers come from -H), and
-- at the end prints one parseable line starting with BENCH_RESULT (latencies in microseconds).

function init(args)
  local f = assert(io.open(args[1], "rb"))
  wrk.method = "POST"
  wrk.body = f:read("*a")
  f:close()
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "BENCH_RESULT requests=%d duration_us=%d p50_us=%.1f p90_us=%.1f p99_us=%.1f " ..
    "max_us=%.1f mean_us=%.1f err_connect=%d err_read=%d err_write=%d err_status=%d " ..
    "err_timeout=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, latency.mean, e.connect, e.read, e.write, e.status,
    e.timeout))
end
