"""Fallback load generator, used only when ``wrk`` cannot be found or installed.

``python bench/pyload.py HOST PORT PATH --connections N --duration S --body-file F -H 'N: v'``
keeps N keep-alive HTTP/1.1 connections busy for S seconds (closed loop, like wrk) and prints
the same ``BENCH_RESULT`` line as ``wrk_post.lua``. It is itself Python, so on a 2-core box it
caps the measurable rate well below wrk's: compare its numbers only with each other.
"""

from __future__ import annotations

import argparse
import asyncio
import time


async def exchange(reader, writer, request):
    """Send ``request`` and read its whole answer; the answer's status."""
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
    return status


async def _connection(host, port, request, deadline, latencies, errors):
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError:
        errors["connect"] += 1
        return
    try:
        while time.perf_counter() < deadline:
            start = time.perf_counter_ns()
            status = await exchange(reader, writer, request)
            latencies.append((time.perf_counter_ns() - start) / 1000)
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


def request_of(args):
    """The POST request the arguments describe, as bytes."""
    with open(args.body_file, "rb") as f:
        body = f.read()
    lines = [f"POST {args.path} HTTP/1.1", f"Host: {args.host}:{args.port}"]
    lines += args.header
    lines += [f"Content-Length: {len(body)}", "", ""]
    return "\r\n".join(lines).encode() + body


def print_result(latencies, elapsed_us, errors):
    """The ``BENCH_RESULT`` line of ``wrk_post.lua``."""
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


def run(main_coroutine, args):
    """Run the load on uvloop when it is installed."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main_coroutine(args))
    else:
        uvloop.run(main_coroutine(args))


async def _main(args):
    request = request_of(args)
    latencies: list[float] = []
    errors = {"connect": 0, "read": 0, "status": 0}
    started = time.perf_counter()
    deadline = started + args.duration
    await asyncio.gather(
        *(
            _connection(args.host, args.port, request, deadline, latencies, errors)
            for _ in range(args.connections)
        )
    )
    print_result(latencies, (time.perf_counter() - started) * 1e6, errors)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("path")
    parser.add_argument("--connections", type=int, default=1)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--body-file", required=True)
    parser.add_argument("-H", "--header", action="append", default=[])
    run(_main, parser.parse_args())


if __name__ == "__main__":
    main()
