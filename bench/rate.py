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

# run as a script (bench/shadow.py starts it by path): its own folder is on sys.path
from pyload import exchange, print_result, request_of, run


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
            status = await exchange(reader, writer, request)
            latencies.append((time.perf_counter() - due) * 1e6)
            if status >= 400:
                errors["status"] += 1
    except (OSError, asyncio.IncompleteReadError, ValueError):
        errors["read"] += 1
    finally:
        writer.close()


async def _main(args):
    request = request_of(args)
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
    print_result(latencies, (time.perf_counter() - started) * 1e6, errors)


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
    run(_main, parser.parse_args())


if __name__ == "__main__":
    main()
