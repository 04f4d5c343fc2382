"""Fixed-rate (open-loop) load: ``python bench/rate.py HOST PORT PATH --rate R --connections N
--duration S --body-file F -H 'N: v'``.

wrk and ``pyload.py`` are closed loops (each connection sends its next request when the last
is answered), which measure capacity; a latency comparison below saturation needs the same
offered load on both sides. Here request ``k`` is due at ``k / R`` seconds, sent on connection
``k mod N`` as soon as it is due and that connection is free, and its latency counts from when
it was due, not when it was sent: a server that falls behind is charged for the wait (no
coordinated omission). Prints the ``BENCH_RESULT`` line of ``wrk_post.lua``.
"""

from __future__ import annotations

import argparse
import asyncio
import time


async def _connection(host, port, request, due_times, latencies, errors):
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError:
        errors["connect"] += len(due_times)
        return
    try:
        for due in due_times:
            wait = due - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if length:
                await reader.readexactly(length)
            latencies.append((time.perf_counter() - due) * 1e6)
            if status >= 400:
                errors["status"] += 1
    except (OSError, asyncio.IncompleteReadError, ValueError):
        errors["read"] += 1
    finally:
        writer.close()


def _pct(sorted_values, q):
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, round(q / 100 * (len(sorted_values) - 1)))
    return sorted_values[index]


async def _main(args):
    with open(args.body_file, "rb") as f:
        body = f.read()
    lines = [f"POST {args.path} HTTP/1.1", f"Host: {args.host}:{args.port}"]
    lines += args.header
    lines += [f"Content-Length: {len(body)}", "", ""]
    request = "\r\n".join(lines).encode() + body
    latencies: list[float] = []
    errors = {"connect": 0, "read": 0, "status": 0}
    total = max(1, int(args.rate * args.duration))
    started = time.perf_counter() + 0.05  # the connections open first
    due = [started + k / args.rate for k in range(total)]
    await asyncio.gather(
        *(
            _connection(
                args.host, args.port, request, due[i :: args.connections], latencies, errors
            )
            for i in range(args.connections)
        )
    )
    elapsed_us = (time.perf_counter() - started) * 1e6
    values = sorted(latencies)
    mean = sum(values) / len(values) if values else 0.0
    print(
        f"BENCH_RESULT requests={len(values)} duration_us={elapsed_us:.0f} "
        f"p50_us={_pct(values, 50):.1f} p90_us={_pct(values, 90):.1f} "
        f"p99_us={_pct(values, 99):.1f} max_us={values[-1] if values else 0:.1f} "
        f"mean_us={mean:.1f} err_connect={errors['connect']} err_read={errors['read']} "
        f"err_write=0 err_status={errors['status']} err_timeout=0",
        flush=True,
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("path")
    parser.add_argument("--rate", type=float, required=True, help="requests per second")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--body-file", required=True)
    parser.add_argument("-H", "--header", action="append", default=[])
    args = parser.parse_args()
    try:
        import uvloop
    except ImportError:
        asyncio.run(_main(args))
    else:
        uvloop.run(_main(args))


if __name__ == "__main__":
    main()
