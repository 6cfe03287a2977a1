// kafkajs 2.2.4's admin client on consumer groups (ListGroups, DescribeGroups,
// DeleteGroups) against moonmq's Kafka listener: one consumer in each of two
// groups joins; then admin.listGroups() (sent to every broker, merged) and
// admin.describeGroups() of both groups and of one nobody joined; one member
// leaves, its group gets offsets (setOffsets) and is deleted, the other
// (still with a member) and an unknown one are refused. Prints one JSON
// line {"listed","described","after_leave","offsets_before","deleted",
// "refused","offsets_after","after_delete"} and exits 0, or 1 with
// {"error":...}; the test judges the content.
//
//   node kafkajs_groups_check.js <host:port> <topic>
//
// kafkajs is found through NODE_PATH (scripts/install-deps.sh installs it
// under ~/.cache/moonmq-npm/node_modules).

const { Kafka, logLevel } = require('kafkajs');

const [broker, topic] = process.argv.slice(2);
const kafka = new Kafka({ clientId: 'moonmq-groups-check', brokers: [broker], logLevel: logLevel.NOTHING,
                          retry: { retries: 8, initialRetryTime: 100 } });

function sleep(ms) { return new Promise((r) => setTimeout(r, ms)); }

function summary(g) {
  return { groupId: g.groupId, state: g.state, protocolType: g.protocolType, protocol: g.protocol,
           errorCode: g.errorCode,
           members: g.members.map((m) => ({ clientId: m.clientId, clientHost: m.clientHost,
                                             assignmentBytes: m.memberAssignment ? m.memberAssignment.length : 0 })) };
}

async function main() {
  const deadline = Date.now() + 40000;
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true });
  const joined = {};
  const consumers = ['kgroups-a', 'kgroups-b'].map((groupId) => {
    const c = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 500, rebalanceTimeout: 10000,
                               maxWaitTimeInMs: 200 });
    c.on(c.events.GROUP_JOIN, () => { joined[groupId] = true; });
    return c;
  });
  for (const c of consumers) {
    await c.connect();
    await c.subscribe({ topic, fromBeginning: true });
    await c.run({ eachMessage: async () => {} });
  }
  while (Date.now() < deadline && Object.keys(joined).length < 2) await sleep(100);
  const listed = (await admin.listGroups()).groups;
  const described = (await admin.describeGroups(['kgroups-a', 'kgroups-b', 'kgroups-none'])).groups.map(summary);
  await consumers[0].disconnect();  // LeaveGroup: kgroups-a is Empty, still listed
  const afterLeave = (await admin.describeGroups(['kgroups-a'])).groups.map(summary);

  const offsets = async () => (await admin.fetchOffsets({ groupId: 'kgroups-a', topics: [topic] }))[0].partitions
    .map((p) => ({ partition: p.partition, offset: p.offset }))
    .sort((a, b) => a.partition - b.partition);
  await admin.setOffsets({ groupId: 'kgroups-a', topic, partitions: [{ partition: 0, offset: '1' },
                                                                     { partition: 1, offset: '2' }] });
  const offsetsBefore = await offsets();
  const deleted = await admin.deleteGroups(['kgroups-a']);
  const refused = {};
  for (const id of ['kgroups-b', 'kgroups-none']) {
    try {
      await admin.deleteGroups([id]);
      refused[id] = 'deleted';
    } catch (e) {
      refused[id] = (e.groups || []).map((g) => g.error && g.error.type).join(',') || String(e);
    }
  }
  const offsetsAfter = await offsets();
  const afterDelete = (await admin.describeGroups(['kgroups-a'])).groups.map(summary);
  await consumers[1].disconnect();
  await admin.disconnect();
  console.log(JSON.stringify({ listed, described, after_leave: afterLeave, offsets_before: offsetsBefore,
                               deleted, refused, offsets_after: offsetsAfter, after_delete: afterDelete }));
  process.exit(0);
}

main().catch((e) => { console.log(JSON.stringify({ error: String(e && e.stack || e) })); process.exit(1); });
