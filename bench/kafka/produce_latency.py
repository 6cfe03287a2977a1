#!/usr/bin/python3
"""Kafka produce latency at a fixed rate against the disk's fdatasync latency.

Run by kafka_bench.sh (issue 15, "Performance": at 5,000 msg/s with 64
requests in flight, p99 <= 3 x the fdatasync p99 of the same run).

  produce_latency.py BOOTSTRAP TOPIC SCRATCH_DIR RATE SECONDS VALUE_BYTES [ADMIN]

1. fdatasync: 2,000 appends of VALUE_BYTES x 5 bytes (one linger's worth of
   records at RATE) to a file in SCRATCH_DIR, each followed by fdatasync;
   the latency of each write+fdatasync pair, in ms.
2. produce: librdkafka (python3-confluent-kafka) with acks=all, linger.ms=0
   and max.in.flight.requests.per.connection=64 sends RATE records/s of
   VALUE_BYTES bytes to TOPIC for SECONDS, paced in 1 ms steps; the latency
   of a record is from produce() to its delivery report (the broker
   answered after the record was fsynced), in ms.

3. with ADMIN (host:port of the node's admin listener): the node's
   moonmq_storage_sync_round_seconds histogram over the produce run, the
   sync of each group commit round as the broker saw it under that load;
   its p50/p99 are the upper bounds of the buckets holding them.

Prints one line per measurement (count, p50, p99, p99.9, max) and the ratio
produce p99 / fdatasync p99 (and / the broker's sync p99 with ADMIN). Exit 1
when a record failed or went unacknowledged.
"""
import math
import os
import sys
import time
import urllib.request

from confluent_kafka import Producer


def percentiles(ms):
    ms = sorted(ms)

    def at(q):  # nearest rank
        return ms[min(len(ms) - 1, max(0, math.ceil(q * len(ms)) - 1))]

    return {"count": len(ms), "p50": at(0.50), "p99": at(0.99), "p999": at(0.999), "max": ms[-1]}


def line(name, p):
    return (f"{name:<14} {p['count']:>8} {p['p50']:>9.2f} {p['p99']:>9.2f} {p['p999']:>9.2f}"
            f" {p['max']:>9.2f}")


def sync_buckets(admin):
    """Cumulative (upper bound in ms, count) of the node's sync histogram."""
    text = urllib.request.urlopen(f"http://{admin}/metrics", timeout=10).read().decode()
    out = []
    for line in text.splitlines():
        if line.startswith("moonmq_storage_sync_round_seconds_bucket{"):
            le = line.split('le="', 1)[1].split('"', 1)[0]
            out.append((float("inf") if le == "+Inf" else float(le) * 1e3, int(float(line.rsplit(" ", 1)[1]))))
    return out


def bucket_percentile(before, after, q):
    deltas = [(b[0], a[1] - b[1]) for b, a in zip(before, after)]
    total = deltas[-1][1] if deltas else 0
    for bound, count in deltas:
        if total and count >= q * total:
            return bound, total
    return float("nan"), total


def fdatasync_ms(scratch, chunk_bytes, rounds=2000):
    path = os.path.join(scratch, "fdatasync-latency")
    chunk = os.urandom(chunk_bytes)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    out = []
    try:
        for _ in range(rounds):
            t0 = time.monotonic()
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view):]
            os.fdatasync(fd)
            out.append((time.monotonic() - t0) * 1e3)
    finally:
        os.close(fd)
        os.unlink(path)
    return out


def produce_ms(bootstrap, topic, rate, seconds, value_bytes):
    p = Producer({
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "linger.ms": 0,
        "max.in.flight.requests.per.connection": 64,
        "enable.idempotence": False,
        "queue.buffering.max.messages": 1000000,
    })
    value = b"x" * value_bytes
    latencies = []
    failures = []

    def report(err, msg, sent):
        if err is not None:
            failures.append(str(err))
        else:
            latencies.append((time.monotonic() - sent) * 1e3)

    # Warm-up: metadata and the connection, outside the measurement.
    p.produce(topic, value, partition=0)
    if p.flush(30) != 0:
        failures.append("warm-up record not acknowledged in 30 s")
        return latencies, failures
    per_ms = rate / 1000.0
    total = int(rate * seconds)
    start = time.monotonic()
    sent = 0
    while sent < total:
        due = min(total, int((time.monotonic() - start) * 1e3 * per_ms) + 1)
        while sent < due:
            now = time.monotonic()
            p.produce(topic, value, partition=0, on_delivery=lambda e, m, t=now: report(e, m, t))
            sent += 1
        next_slot = start + (sent / per_ms) / 1e3
        p.poll(max(0.0, next_slot - time.monotonic()))
    left = p.flush(60)
    if left:
        failures.append(f"{left} records not acknowledged 60 s after the last produce")
    return latencies, failures


def main():
    if len(sys.argv) not in (7, 8):
        print("usage: produce_latency.py BOOTSTRAP TOPIC SCRATCH_DIR RATE SECONDS VALUE_BYTES [ADMIN]",
              file=sys.stderr)
        return 2
    bootstrap, topic, scratch = sys.argv[1:4]
    rate, seconds, value_bytes = float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
    admin = sys.argv[7] if len(sys.argv) == 8 else None
    disk = percentiles(fdatasync_ms(scratch, value_bytes * 5))
    before = sync_buckets(admin) if admin else []
    lat, failures = produce_ms(bootstrap, topic, rate, seconds, value_bytes)
    after = sync_buckets(admin) if admin else []
    if failures:
        print(f"produce_latency: {len(failures)} failures, first: {failures[0]}", file=sys.stderr)
        return 1
    if len(lat) != int(rate * seconds):
        print(f"produce_latency: {len(lat)} delivery reports, expected {int(rate * seconds)}", file=sys.stderr)
        return 1
    prod = percentiles(lat)
    print(f"{'latency (ms)':<14} {'count':>8} {'p50':>9} {'p99':>9} {'p99.9':>9} {'max':>9}")
    print(line("fdatasync", disk))
    print(line(f"kafka {int(rate)}/s", prod))
    if admin:
        p50, rounds = bucket_percentile(before, after, 0.50)
        p99, _ = bucket_percentile(before, after, 0.99)
        print(f"{'broker syncs':<14} {rounds:>8} {'<=' + format(p50, '.2f'):>9} {'<=' + format(p99, '.2f'):>9}"
              "   (moonmq_storage_sync_round_seconds during the run)")
    print(f"p99 kafka / p99 fdatasync: {prod['p99'] / disk['p99']:.2f}")
    if admin:
        print(f"p99 kafka / p99 broker sync (bucket bound): {prod['p99'] / p99:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
