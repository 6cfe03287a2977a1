// kafkajs 2.2.4 transactions (KIP-98) against moonmq's Kafka listener: a
// transactional producer (idempotent, one request in flight) runs three
// transactions over three topics, each owned by a different broker:
//   c1: send 'c1-<i>' to the three topics, commit;
//   ab: send 'ab-<i>', sendOffsets(group, offsets 50), abort;
//   c3: send 'c3-<i>', sendOffsets(group, offsets 3/4/5), commit.
// The group's committed offsets are read with admin.fetchOffsets after the
// abort, before c3's commit and after it. Then a read_committed consumer
// (readUncommitted: false, the default) and a read_uncommitted one read the
// three topics from the beginning. Prints one JSON line
// {"offsets_after_abort","offsets_before_commit","offsets_after_commit",
//  "read_committed","read_uncommitted"} (offsets as [{topic,partition,offset}],
// reads as lists of values) and exits 0, or 1 with {"error":...}; the test
// judges the content.
//
//   node kafkajs_txn_check.js <host:port,...> <topic0,topic1,topic2> <group> <records per transaction>
//
// kafkajs is found through NODE_PATH (scripts/install-deps.sh installs it
// under ~/.cache/moonmq-npm/node_modules).

const { Kafka, logLevel } = require('kafkajs');

const [brokers, topicList, group, perTxn] = process.argv.slice(2);
const topics = topicList.split(',');
const n = Number(perTxn);
const kafka = new Kafka({ clientId: 'moonmq-txn-check', brokers: brokers.split(','), logLevel: logLevel.NOTHING,
                          retry: { retries: 10, initialRetryTime: 100 } });

function sleep(ms) { return new Promise((r) => setTimeout(r, ms)); }

/// `count` records "<tag>-<i>" spread over the three topics (partition 0).
function batch(tag, count) {
  return topics.map((topic, t) => ({
    topic,
    messages: Array.from({ length: count }, (_, i) => i).filter((i) => i % topics.length === t)
      .map((i) => ({ partition: 0, value: `${tag}-${i}` })),
  }));
}

function offsetsOf(offsetsByTopic) {
  return topics.map((topic, t) => ({ topic, partitions: [{ partition: 0, offset: String(offsetsByTopic[t]) }] }));
}

/// Reads the three topics from the beginning in a fresh group until `want`
/// values came and nothing more came for 1.5 s (or 25 s passed).
async function readAll(readUncommitted, want) {
  const consumer = kafka.consumer({ groupId: `${group}-reader-${readUncommitted ? 'u' : 'c'}`, readUncommitted,
                                    sessionTimeout: 10000, heartbeatInterval: 500, maxWaitTimeInMs: 200 });
  const got = [];
  let last = Date.now();
  await consumer.connect();
  for (const topic of topics) await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({ eachMessage: async ({ message }) => { got.push(message.value.toString()); last = Date.now(); } });
  const deadline = Date.now() + 25000;
  while (Date.now() < deadline && (got.length < want || Date.now() - last < 1500)) await sleep(100);
  await consumer.disconnect();
  return got;
}

async function main() {
  const admin = kafka.admin();
  await admin.connect();
  // One topic at a time: fetchOffsets looks its topics up concurrently, and
  // kafkajs 2.2.4's metadata refreshes for a growing topic list can land out
  // of order, leaving a topic without partitions in its cached metadata.
  const committedOffsets = async () => {
    const out = [];
    for (const topic of topics) {
      const [t] = await admin.fetchOffsets({ groupId: group, topics: [topic] });
      out.push({ topic: t.topic, partition: t.partitions[0].partition, offset: Number(t.partitions[0].offset) });
    }
    return out;
  };

  const producer = kafka.producer({ transactionalId: `${group}-producer`, idempotent: true, maxInFlightRequests: 1,
                                    transactionTimeout: 30000 });
  await producer.connect();

  let tx = await producer.transaction();
  await tx.sendBatch({ topicMessages: batch('c1', n) });
  await tx.commit();

  tx = await producer.transaction();
  await tx.sendBatch({ topicMessages: batch('ab', n) });
  await tx.sendOffsets({ consumerGroupId: group, topics: offsetsOf([50, 50, 50]) });
  await tx.abort();
  const offsetsAfterAbort = await committedOffsets();

  tx = await producer.transaction();
  await tx.sendBatch({ topicMessages: batch('c3', n) });
  await tx.sendOffsets({ consumerGroupId: group, topics: offsetsOf([3, 4, 5]) });
  const offsetsBeforeCommit = await committedOffsets();
  await tx.commit();
  const offsetsAfterCommit = await committedOffsets();
  await producer.disconnect();

  const readCommitted = await readAll(false, 2 * n);
  const readUncommitted = await readAll(true, 3 * n);
  await admin.disconnect();
  console.log(JSON.stringify({ offsets_after_abort: offsetsAfterAbort, offsets_before_commit: offsetsBeforeCommit,
                               offsets_after_commit: offsetsAfterCommit, read_committed: readCommitted,
                               read_uncommitted: readUncommitted }));
  process.exit(0);
}

main().catch((e) => { console.log(JSON.stringify({ error: String(e && e.stack || e) })); process.exit(1); });
