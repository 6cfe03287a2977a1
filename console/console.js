// The moonmq web console (docs/console.md). Polls this node's admin API every
// POLL_MS and redraws the panels; every data call sends the admin token kept
// in sessionStorage, and a 401 brings up the token form.
'use strict';

const POLL_MS = 1500;
const TIMEOUT_MS = 5000;
const TOKEN_KEY = 'moonmq.adminToken';
const MAX_MOVES = 30;
// Broker load columns: resource of the balancer's model -> distribution goal.
const RESOURCES = [['nw_in', 'NW_IN', rate], ['nw_out', 'NW_OUT', rate], ['disk', 'DISK', bytes],
                   ['partitions', 'PARTITION_COUNT', String]];

const $ = (id) => document.getElementById(id);
const lastEnd = new Map();  // "topic/partition" -> {end, at}: records/s between two polls
let unreachableSince = null;

class Unauthorized extends Error {}

async function api(path) {
  const headers = {};
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = 'Bearer ' + token;
  const res = await fetch(path, {headers, cache: 'no-store', signal: AbortSignal.timeout(TIMEOUT_MS)});
  if (res.status === 401) throw new Unauthorized('the admin token is missing or wrong');
  const body = await res.json();
  if (!res.ok) throw new Error(`${path}: ${body.message || res.status}`);
  return body;
}

// A panel's own call failing shows in that panel; only a 401 stops the round.
const orError = (promise) => promise.catch((e) => {
  if (e instanceof Unauthorized) throw e;
  return {error: e.message};
});

// Group describes in flight at once.
const GROUP_CALLS = 4;

// fn over items with at most `limit` calls in flight; results in order.
async function mapLimited(items, limit, fn) {
  const out = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({length: Math.min(limit, items.length)}, worker));
  return out;
}

async function poll() {
  try {
    const cluster = await api('/admin/cluster');
    const inCluster = 'raft' in cluster;
    const controller = cluster.controller && cluster.controller.id;
    const [moves, topics, groups, balancer] = await Promise.all([
      inCluster ? orError(api('/admin/reassignments')) : {reassignments: []},
      orError(api('/v1/topics')),
      orError(api('/v1/groups')),
      orError(api('/admin/balancer' + (controller ? '?broker=' + encodeURIComponent(controller) : ''))),
    ]);
    // Each group's lag asks every owner of its partitions: a few at a time,
    // and the next round starts only once this one is over.
    const details = await mapLimited(groups.groups || [], GROUP_CALLS,
      (g) => orError(api('/v1/groups/' + encodeURIComponent(g.group))));
    render(cluster, moves, topics, groups, details, balancer);
    unreachableSince = null;
    setStatus('live', 'live · updated ' + new Date().toLocaleTimeString());
  } catch (e) {
    if (e instanceof Unauthorized) {
      askForToken(sessionStorage.getItem(TOKEN_KEY) ? 'that token was refused' : '');
      return;  // polling resumes once a token is entered
    }
    unreachableSince = unreachableSince || new Date();
    setStatus('unreachable', `unreachable since ${unreachableSince.toLocaleTimeString()}: ${e.message}`);
  }
  setTimeout(poll, POLL_MS);
}

function setStatus(state, text) {
  const s = $('status');
  s.dataset.state = state;
  s.textContent = text;
  $('panels').classList.toggle('stale', state !== 'live');
}

function askForToken(error) {
  setStatus('token', 'admin token needed');
  $('panels').hidden = true;
  $('token-form').hidden = false;
  $('token-error').textContent = error;
  $('token-input').focus();
}

$('token-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, $('token-input').value.trim());
  $('token-input').value = '';
  $('token-form').hidden = true;
  $('panels').hidden = false;
  setStatus('loading', 'loading…');
  poll();
});

function render(cluster, moves, topics, groups, details, balancer) {
  const self = cluster.brokers.find((b) => b.self);
  $('served-by').textContent = self ? `served by ${self.id}` : '';
  const pass = balancer.last_pass;
  renderBrokers(cluster, pass);
  const plan = pass && pass.plan;
  renderRaft(cluster);
  renderMoves(moves);
  renderBalancer(balancer, plan);
  renderPartitions(cluster, topics);
  renderGroups(groups, details);
}

function renderBrokers(cluster, pass) {
  const owned = {};
  for (const p of cluster.partitions) owned[p.owner] = (owned[p.owner] || 0) + 1;
  const plan = (pass && pass.plan) || {};
  const goals = Object.fromEntries((plan.goals || []).map((g) => [g.name, g]));
  const loads = plan.brokers_before || {};
  // A broker the pass left out (dead, excluded, window not yet complete) is
  // not held to the band.
  const counted = Object.fromEntries(((pass && pass.brokers) || []).map(
    (b) => [b.id, b.alive !== false && !b.excluded && !b.incomplete_window]));
  fill('brokers', cluster.brokers.map((b) => {
    const tr = row([b.id + (b.self ? ' (this node)' : ''), b.alive ? 'yes' : 'no', b.fenced ? 'yes' : 'no',
                    b.state || 'active', owned[b.id] || 0]);
    tr.dataset.broker = b.id;
    tr.dataset.alive = b.alive;
    if (!b.alive) tr.title = b.error || '';
    for (const [resource, goal, format] of RESOURCES)
      tr.append(loadCell(loads[b.id] && loads[b.id][resource], counted[b.id] === false ? null : goals[goal], format));
    if (counted[b.id] === false)
      tr.cells[3].append(document.createElement('br'), text(document.createElement('small'), 'left out of the last pass'));
    return tr;
  }));
}

// A broker's load with the goal's band under it; outside the band is marked.
function loadCell(value, goal, format) {
  const td = document.createElement('td');
  if (typeof value !== 'number') return text(td, '–');
  td.append(format(value));
  if (goal && typeof goal.lower === 'number' && typeof goal.upper === 'number') {
    const band = document.createElement('small');
    band.textContent = `${format(goal.lower)} – ${format(goal.upper)}`;
    td.append(document.createElement('br'), band);
    td.className = value < goal.lower || value > goal.upper ? 'out' : 'in';
  }
  return td;
}

function renderRaft(cluster) {
  const c = cluster.controller || {};
  const raft = cluster.raft || {};
  pairs('raft', [
    ['leader (controller)', c.id || 'none known'], ['term', cluster.term ?? c.epoch ?? '–'],
    ['commit index', cluster.commit_index ?? '–'], ['this node', raft.role || 'no Raft (single broker)'],
    ['applied index', raft.applied_index ?? '–'],
    ['fenced brokers', (cluster.fenced_brokers || []).join(', ') || 'none'],
    ['offline partitions', (cluster.offline_partitions || []).map((p) => `${p.topic}/${p.partition}`).join(', ') || 'none'],
  ]);
}

function renderMoves(moves) {
  if (moves.error) return fill('moves', [row([moves.error])]);
  const rows = [...moves.reassignments].sort((a, b) => (b.started_ms || 0) - (a.started_ms || 0)).slice(0, MAX_MOVES);
  fill('moves', rows.length ? rows.map((m) => {
    const tr = row([`${m.topic}/${m.partition}`, `${m.from} → ${m.to}`, m.state + (m.error ? `: ${m.error}` : '')]);
    tr.dataset.topic = m.topic;
    tr.dataset.partition = m.partition;
    tr.dataset.state = m.state;
    tr.append(progressCell(m), cell(m.origin || m.source || ''), cell(ago(m.updated_ms)));
    return tr;
  }) : [row(['no moves'])]);
}

function progressCell(m) {
  const td = document.createElement('td');
  const total = m.bytes_total || 0;
  const done = m.state === 'done' ? total : Math.min(m.bytes_copied || 0, total);
  const bar = document.createElement('progress');
  bar.max = total || 1;
  bar.value = m.state === 'done' ? bar.max : done;
  td.append(bar, ` ${bytes(done)} / ${bytes(total)}`);
  return td;
}

function renderBalancer(balancer, plan) {
  if (balancer.error) {
    pairs('balancer', [['balancer', balancer.error]]);
    fill('goals', []);
    fill('actions', []);
    return;
  }
  const pass = balancer.last_pass;
  pairs('balancer', [
    ['broker', balancer.broker_id || 'this node'], ['enabled', yesNo(balancer.enabled)],
    ['dry run', yesNo(balancer.dry_run)], ['passes', balancer.passes ?? 0],
    ['last pass', pass ? `${ago(pass.started_ms)}, ${pass.duration_ms} ms` : 'none yet'],
    ['balancedness', plan ? `${round(plan.balancedness_before)} → ${round(plan.balancedness_after)}` : '–'],
  ]);
  fill('goals', ((plan && plan.goals) || []).map((g) => row([
    g.name, num(g.mean), typeof g.lower === 'number' ? `${num(g.lower)} – ${num(g.upper)}` : '–',
    (g.violations_before || []).join(', ') || 'none', (g.violations_after || []).join(', ') || 'none',
    g.explanation || ''])));
  const actions = (plan && plan.actions) || [];
  fill('actions', actions.length ? actions.map((a) => row([`${a.topic}/${a.partition} ${a.from} → ${a.to}`, a.goal,
                                                           a.reason || '']))
                                 : [row([plan ? 'the last pass planned no move' : 'no plan yet'])]);
}

function renderPartitions(cluster, topics) {
  if (topics.error) return fill('partitions', [row([topics.error])]);
  const byKey = new Map(cluster.partitions.map((p) => [`${p.topic}/${p.partition}`, p]));
  const now = performance.now();
  const rows = [];
  for (const t of topics.topics) {
    const parts = [];
    let size = 0, total = 0;
    for (let i = 0; i < t.partitions; i++) {
      const key = `${t.name}/${i}`;
      const p = byKey.get(key);
      if (!p) { parts.push(row([key, 'not surveyed'])); continue; }
      const r = recordRate(key, p.log_end_offset, now);
      size += p.size_bytes || 0;
      total += r || 0;
      const tr = row([key, p.owner + (p.conflict ? ' (conflict)' : ''), p.log_start_offset, p.log_end_offset,
                      bytes(p.size_bytes || 0), r === null ? '…' : num(r)]);
      tr.dataset.partition = key;
      parts.push(tr);
    }
    const head = row([t.name, `${t.partitions} partition${t.partitions === 1 ? '' : 's'}`, '', '', bytes(size), num(total)]);
    head.className = 'topic';
    rows.push(head, ...parts);
  }
  fill('partitions', rows.length ? rows : [row(['no topics'])]);
}

// Records per second between this poll and the previous one (null at first).
function recordRate(key, end, now) {
  const before = lastEnd.get(key);
  lastEnd.set(key, {end, at: now});
  if (!before || now <= before.at || end < before.end) return null;
  return (end - before.end) * 1000 / (now - before.at);
}

function renderGroups(groups, details) {
  if (groups.error) return fill('groups', [row([groups.error])]);
  fill('groups', groups.groups.length ? groups.groups.map((g, i) => {
    const d = details[i];
    const lag = d.error ? d.error : d.lag + (d.lag_complete === false ? ' (partial)' : '');
    return row([g.group, g.state, g.coordinator, g.members, g.protocol, lag]);
  }) : [row(['no groups'])]);
}

// --- small DOM and format helpers ------------------------------------------

function cell(value) { return text(document.createElement('td'), value); }
function text(el, value) { el.textContent = value; return el; }
function row(values) {
  const tr = document.createElement('tr');
  tr.append(...values.map(cell));
  return tr;
}
function fill(id, rows) { $(id).tBodies[0].replaceChildren(...rows); }
function pairs(id, entries) {
  $(id).replaceChildren(...entries.flatMap(([k, v]) => [text(document.createElement('dt'), k),
                                                        text(document.createElement('dd'), v)]));
}
function yesNo(b) { return b ? 'yes' : 'no'; }
function round(x) { return typeof x === 'number' ? x.toFixed(1) : '–'; }
function num(x) {
  if (typeof x !== 'number') return '–';
  return x >= 1e6 ? (x / 1e6).toFixed(1) + 'M' : x >= 1e4 ? (x / 1e3).toFixed(1) + 'k' : String(Math.round(x));
}
function bytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : String(Math.round(n))) + ' ' + units[i];
}
function rate(n) { return bytes(n) + '/s'; }
function ago(ms) {
  if (!ms) return '';
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  return s < 90 ? `${s} s ago` : s < 5400 ? `${Math.round(s / 60)} min ago` : new Date(ms).toLocaleString();
}

poll();
