#!/usr/bin/python3
"""txn_bench — transactional against idempotent produce through librdkafka.

Against a running moonmq broker (or cluster) with the metadata log (a
Cluster section: transactions keep their coordinator state there,
docs/transactions.md), in the same run, for each producer count P of
--producers (one process per producer, each with its share of N):

  1. idempotent : N records of B bytes to topic T (enable.idempotence,
                  acks=all), produced in a loop and flushed once per
                  producer: the pipelined baseline.
  2. transactional: the same N records in transactions of K records each
                  (begin, K produces, commit_transaction, which returns
                  once the markers are written), each producer with its own
                  transactional id.

Each producer first warms up outside the timed part (the idempotent one
produces and flushes one record, the transactional one runs
init_transactions and one transaction of one record), so both paths are
timed from a connected producer; the warm-up transaction's commit latency
is printed on its own ("first"), since it includes librdkafka's wait for
its transaction coordinator connection. Throughput is N over the time from
the first producer's start to the last one's end.

Prints records/s and MB/s (MB = 10^6 bytes of values) of each, the ratio
transactional / idempotent (issue target: >= 0.7 at K = 100), and the
commit_transaction latency p50 / p99 / max in ms. Then reads the topic with
isolation.level=read_committed and fails (exit 1) unless exactly the
records produced in the timed parts are there.

  txn_bench.py --bootstrap HOST:PORT [--records N] [--value-bytes B]
               [--per-txn K] [--topic T] [--producers 1,4]

python3-confluent-kafka (librdkafka 2.0.2 on Debian 12) is the client.
"""
import argparse
import multiprocessing as mp
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


def idempotent_worker(a, n, barrier, out):
    p = Producer({"bootstrap.servers": a.bootstrap, "enable.idempotence": True, "acks": "all",
                  "linger.ms": 5})
    # Warm up metadata (and create the topic by auto-creation).
    p.produce(a.topic, value=b"warm")
    p.flush(30)
    value = b"x" * a.value_bytes
    barrier.wait()
    t0 = time.monotonic()
    produce(p, a.topic, value, n)
    p.flush(60)
    out.put((t0, time.monotonic(), [], 0.0))


def transactional_worker(a, index, n, barrier, out):
    p = Producer({"bootstrap.servers": a.bootstrap, "transactional.id": "txn-bench-%d" % index,
                  "linger.ms": 5})
    p.init_transactions(30)
    c0 = time.monotonic()
    p.begin_transaction()
    p.produce(a.topic, value=b"warm")
    p.commit_transaction(60)
    first = (time.monotonic() - c0) * 1000.0
    value = b"x" * a.value_bytes
    commits = []
    barrier.wait()
    t0 = time.monotonic()
    left = n
    while left > 0:
        k = min(a.per_txn, left)
        p.begin_transaction()
        produce(p, a.topic, value, k)
        c0 = time.monotonic()
        p.commit_transaction(60)
        commits.append((time.monotonic() - c0) * 1000.0)
        left -= k
    out.put((t0, time.monotonic(), commits, first))


def run(a, worker, producers):
    """Runs `producers` processes of `worker` over a.records; (seconds, commits, firsts)."""
    barrier = mp.Barrier(producers)
    out = mp.Queue()
    share = [a.records // producers + (1 if i < a.records % producers else 0) for i in range(producers)]
    procs = []
    for i in range(producers):
        args = (a, share[i], barrier, out) if worker is idempotent_worker else (a, i, share[i], barrier, out)
        procs.append(mp.Process(target=worker, args=args))
    for pr in procs:
        pr.start()
    results = [out.get(timeout=600) for _ in procs]
    for pr in procs:
        pr.join()
        if pr.exitcode != 0:
            raise SystemExit("a producer process failed (exit %s)" % pr.exitcode)
    seconds = max(r[1] for r in results) - min(r[0] for r in results)
    return seconds, [c for r in results for c in r[2]], [r[3] for r in results]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--value-bytes", type=int, default=1024)
    ap.add_argument("--per-txn", type=int, default=100)
    ap.add_argument("--topic", default="txnbench")
    ap.add_argument("--producers", default="1,4", help="comma-separated producer counts, one run each")
    a = ap.parse_args()
    mb = a.records * a.value_bytes / 1e6
    counts = [int(x) for x in a.producers.split(",") if x]

    print("%-10s %-16s %10s %10s %8s" % ("producers", "path", "records/s", "MB/s", "ratio"))
    for producers in counts:
        idem_s, _, _ = run(a, idempotent_worker, producers)
        txn_s, commits, firsts = run(a, transactional_worker, producers)
        print("%-10d %-16s %10.0f %10.1f %8s" % (producers, "idempotent", a.records / idem_s, mb / idem_s, "1.00"))
        print("%-10d %-16s %10.0f %10.1f %8.2f" % (producers, "transactional", a.records / txn_s, mb / txn_s,
                                                   idem_s / txn_s))
        print("           commit_transaction ms (%d transactions of %d): p50 %.2f  p99 %.2f  max %.2f  "
              "first (warm-up) %.0f"
              % (len(commits), a.per_txn, percentile(commits, 50), percentile(commits, 99), max(commits),
                 max(firsts)))

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
    want = 2 * a.records * len(counts)
    print("read_committed records: %d (expected %d)" % (seen, want))
    return 0 if seen == want else 1


if __name__ == "__main__":
    sys.exit(main())
