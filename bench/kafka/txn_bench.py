#!/usr/bin/python3
"""txn_bench — transactional against idempotent produce through librdkafka.

Against a running moonmq broker (or cluster) with the metadata log (a
Cluster section: transactions keep their coordinator state there,
docs/transactions.md), in the same run:

  1. idempotent : N records of B bytes to topic T (enable.idempotence,
                  acks=all), produced in a loop and flushed once: the
                  pipelined baseline.
  2. transactional: the same N records in transactions of K records each
                  (begin, K produces, commit_transaction, which waits for
                  the markers), one producer.

Prints records/s and MB/s (MB = 10^6 bytes of values) of each, the ratio
transactional / idempotent (issue target: >= 0.7 at K = 100), and the
commit_transaction latency p50 / p99 / max in ms. Then reads the topic with
isolation.level=read_committed and fails (exit 1) unless exactly 2N records
are there.

  txn_bench.py --bootstrap HOST:PORT [--records N] [--value-bytes B]
               [--per-txn K] [--topic T]

python3-confluent-kafka (librdkafka 2.0.2 on Debian 12) is the client.
"""
import argparse
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition


def percentile(xs, p):
    xs = sorted(xs)
    if not xs:
        return 0.0
    return xs[min(len(xs) - 1, int(p / 100.0 * len(xs)))]


def produce(p, topic, value, n):
    """Produces `n` copies of `value`, waiting for room when the queue is full."""
    for _ in range(n):
        while True:
            try:
                p.produce(topic, value=value)
                break
            except BufferError:
                p.poll(0.01)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--value-bytes", type=int, default=1024)
    ap.add_argument("--per-txn", type=int, default=100)
    ap.add_argument("--topic", default="txnbench")
    a = ap.parse_args()
    value = b"x" * a.value_bytes
    mb = a.records * a.value_bytes / 1e6

    idem = Producer({"bootstrap.servers": a.bootstrap, "enable.idempotence": True, "acks": "all",
                     "linger.ms": 5})
    # Warm up metadata (and create the topic by auto-creation).
    idem.produce(a.topic, value=b"warm")
    idem.flush(30)
    t0 = time.monotonic()
    produce(idem, a.topic, value, a.records)
    idem.flush(60)
    idem_s = time.monotonic() - t0

    txn = Producer({"bootstrap.servers": a.bootstrap, "transactional.id": "txn-bench", "linger.ms": 5})
    txn.init_transactions(30)
    commits = []
    t0 = time.monotonic()
    left = a.records
    while left > 0:
        n = min(a.per_txn, left)
        txn.begin_transaction()
        produce(txn, a.topic, value, n)
        c0 = time.monotonic()
        txn.commit_transaction(60)
        commits.append((time.monotonic() - c0) * 1000.0)
        left -= n
    txn_s = time.monotonic() - t0

    print("%-16s %10s %10s %8s" % ("path", "records/s", "MB/s", "ratio"))
    print("%-16s %10.0f %10.1f %8s" % ("idempotent", a.records / idem_s, mb / idem_s, "1.00"))
    print("%-16s %10.0f %10.1f %8.2f" % ("transactional", a.records / txn_s, mb / txn_s, idem_s / txn_s))
    print("commit_transaction ms (%d transactions of %d): p50 %.2f  p99 %.2f  max %.2f"
          % (len(commits), a.per_txn, percentile(commits, 50), percentile(commits, 99), max(commits)))

    c = Consumer({"bootstrap.servers": a.bootstrap, "group.id": "txn-bench-check",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    c.assign([TopicPartition(a.topic, 0, 0)])
    seen = 0
    idle = 0
    while idle < 10:
        msgs = c.consume(10000, 0.5)
        if not msgs:
            idle += 1
            continue
        idle = 0
        seen += sum(1 for m in msgs if not m.error() and m.value() != b"warm")
    c.close()
    want = 2 * a.records
    print("read_committed records: %d (expected %d)" % (seen, want))
    return 0 if seen == want else 1


if __name__ == "__main__":
    sys.exit(main())
