// kafkajs 2.2.4 against moonmq's Kafka listener (issue 9): an idempotent
// producer writes COUNT keyed records to a 4-partition topic while a
// two-member consumer group (same group, two consumers) reads them; every
// record must arrive exactly once. Prints one JSON line and exits 0 on
// success, 1 on failure.
//
//   node kafkajs_check.js <host:port> <topic> <count>
//
// kafkajs is found through NODE_PATH (scripts/install-deps.sh installs it
// under ~/.cache/moonmq-npm/node_modules).

const { Kafka, logLevel } = require('kafkajs');

const [broker, topic, countArg] = process.argv.slice(2);
const count = Number(countArg || 1000);
const kafka = new Kafka({ clientId: 'moonmq-kafkajs-check', brokers: [broker], logLevel: logLevel.NOTHING,
                          retry: { retries: 8, initialRetryTime: 100 } });

function sleep(ms) { return new Promise((r) => setTimeout(r, ms)); }

async function main() {
  const deadline = Date.now() + 40000;
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 4 }], waitForLeaders: true });
  await admin.disconnect();

  // Two members of one group; wait until both hold a share of the 4
  // partitions in the same generation before producing, so that no
  // rebalance happens while records flow (nothing delivered twice).
  const seen = new Map();
  const joins = [{}, {}];
  const consumers = [0, 1].map((i) => {
    const c = kafka.consumer({ groupId: 'kafkajs-g', sessionTimeout: 10000, heartbeatInterval: 500,
                               rebalanceTimeout: 10000, maxWaitTimeInMs: 200 });
    c.on(c.events.GROUP_JOIN, (e) => { joins[i] = e.payload; });
    return c;
  });
  for (const c of consumers) {
    await c.connect();
    await c.subscribe({ topic, fromBeginning: true });
    await c.run({ eachMessage: async ({ partition, message }) => {
      const v = message.value.toString();
      seen.set(v, (seen.get(v) || 0) + 1);
    } });
  }
  const parts = (j) => (j.memberAssignment && j.memberAssignment[topic]) || [];
  let split = [];
  while (Date.now() < deadline) {
    const [a, b] = joins;
    if (a.groupId && b.groupId && parts(a).length + parts(b).length === 4 && parts(a).length > 0
        && parts(b).length > 0) {
      split = joins.map((j) => [...parts(j)].sort());
      break;
    }
    await sleep(100);
  }

  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  for (let i = 0; i < count; i += 50) {
    const messages = [];
    for (let j = i; j < Math.min(count, i + 50); ++j) messages.push({ key: `k${j}`, value: `v${j}` });
    await producer.send({ topic, acks: -1, messages });
  }
  await producer.disconnect();

  while (Date.now() < deadline && seen.size < count) await sleep(100);
  await sleep(300);  // a late duplicate would show up here
  // Counted before the members leave (a leave rebalances the other member,
  // which may then re-read records not yet committed: at-least-once).
  const duplicates = [...seen.values()].filter((n) => n > 1).length;
  const result = { received: seen.size, expected: count, duplicates, assignments: split };
  for (const c of consumers) await c.disconnect();
  console.log(JSON.stringify(result));
  process.exit(seen.size === count && duplicates === 0 && split.length === 2 ? 0 : 1);
}

main().catch((e) => { console.log(JSON.stringify({ error: String(e && e.stack || e) })); process.exit(1); });
