// Drives the web console (console/, docs/console.md) in headless Chromium
// through puppeteer-core (scripts/install-deps.sh puts it in
// ~/.cache/moonmq-npm; run with NODE_PATH set to its node_modules).
//
//   node console.test.js check --url http://127.0.0.1:9644 --brokers 3 [--token T] [--move orders/0:b2]
//     The page loads with no console error, page error or failed request,
//     shows --brokers brokers alive and, with --move, follows that move
//     (submitted here through POST /admin/reassignments) to done. With
//     --token: a data call without the token gets 401, the page asks for the
//     token and shows the cluster once it is entered. With --then-unreachable
//     yes: after those checks it prints "stop the node now" and waits for
//     the page to say the node is unreachable.
//   node console.test.js screenshot --url U [--token T] --out console.png [--wait-ms N]
//     A PNG of the page once the brokers show (after N ms more, default 3000).
//
// Exits 0 on success, 1 with the reason otherwise; the browser is closed on
// every path, and a watchdog ends the run after 150 s.
'use strict';
const puppeteer = require('puppeteer-core');

const args = parseArgs(process.argv.slice(2));
const chromium = process.env.CHROMIUM || '/usr/bin/chromium';
const problems = [];   // console errors, page errors, failed requests
let allow401 = false;  // while the token is knowingly missing

function parseArgs(argv) {
  const out = {mode: argv[0]};
  for (let i = 1; i < argv.length; i += 2) out[argv[i].replace(/^--/, '')] = argv[i + 1];
  return out;
}

function log(...parts) { console.log('console-test:', ...parts); }

async function within(what, ms, page, fn, ...fnArgs) {
  try {
    return await page.waitForFunction(fn, {timeout: ms, polling: 200}, ...fnArgs);
  } catch (e) {
    throw new Error(`${what} not seen within ${ms} ms; page text:\n${await page.evaluate(() => document.body.innerText)}`);
  }
}

async function waitForBrokers(page, count) {
  await within(`${count} live brokers`, 30000, page, (n) => {
    const rows = [...document.querySelectorAll('#brokers tbody tr[data-alive="true"]')];
    return rows.length === n && document.getElementById('status').dataset.state === 'live';
  }, count);
  log(`${count} brokers alive:`, await page.$$eval('#brokers tbody tr', (rows) => rows.map((r) => r.dataset.broker).join(',')));
}

async function enterToken(page, token) {
  await within('the token form', 15000, page, () => !document.getElementById('token-form').hidden);
  const noToken = await fetch(args.url + '/admin/cluster');
  if (noToken.status !== 401) throw new Error(`GET /admin/cluster without the token answered ${noToken.status}, not 401`);
  const others = problems.filter((p) => !/status of 401/.test(p));
  if (others.length) throw new Error('errors before the token was entered: ' + others.join('\n'));
  problems.length = 0;
  allow401 = false;
  await page.type('#token-input', token);
  await page.click('#token-form button');
  log('token form shown, token entered');
}

async function followMove(page, spec) {
  const [, topic, partition, to] = /^(.+)\/(\d+):(.+)$/.exec(spec) || [];
  if (!topic) throw new Error(`--move wants topic/partition:broker, got '${spec}'`);
  const headers = {'Content-Type': 'application/json'};
  if (args.token) headers.Authorization = 'Bearer ' + args.token;
  const res = await fetch(args.url + '/admin/reassignments', {
    method: 'POST', headers,
    body: JSON.stringify({version: 1, partitions: [{topic, partition: Number(partition), replicas: [to]}]})});
  const body = await res.json();
  if (res.status !== 202 || body.accepted.length !== 1) throw new Error(`move refused: ${res.status} ${JSON.stringify(body)}`);
  const moveId = body.accepted[0].move_id;
  log(`move ${topic}/${partition} -> ${to} submitted (${moveId})`);
  const seen = [];
  const deadline = Date.now() + 60000;
  for (;;) {
    const state = await page.evaluate((t, p) => {
      const row = document.querySelector(`#moves tr[data-topic="${t}"][data-partition="${p}"]`);
      return row ? row.dataset.state : null;
    }, topic, partition);
    if (state && seen[seen.length - 1] !== state) seen.push(state);
    if (state === 'done') break;
    if (state === 'failed' || state === 'cancelled') throw new Error(`the page shows the move ${state}`);
    if (Date.now() > deadline) throw new Error(`the move did not show done within 60 s; states seen: ${seen.join(' > ')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const progress = await page.$eval(`#moves tr[data-topic="${topic}"][data-partition="${partition}"] progress`,
                                    (p) => p.value / p.max);
  if (progress !== 1) throw new Error(`a done move shows progress ${progress}`);
  log('the page followed the move:', seen.join(' > '));
  // The partition's new owner shows in the topics panel too.
  await within(`${topic}/${partition} owned by ${to}`, 15000, page, (key, owner) => {
    const row = document.querySelector(`#partitions tr[data-partition="${key}"]`);
    return row && row.cells[1].textContent === owner;
  }, `${topic}/${partition}`, to);
}

async function main() {
  if (!args.url || !['check', 'screenshot'].includes(args.mode)) throw new Error('usage: see the top of console.test.js');
  const browser = await puppeteer.launch({
    executablePath: chromium, headless: true,
    args: ['--no-sandbox', '--headless=new', '--disable-gpu', '--disable-dev-shm-usage', '--window-size=1600,1200'],
    defaultViewport: {width: 1600, height: 1200}});
  const watchdog = setTimeout(() => { console.error('console-test: watchdog: 150 s'); browser.close().finally(() => process.exit(1)); }, 150000);
  try {
    const page = await browser.newPage();
    page.on('console', (m) => { if (m.type() === 'error') problems.push('console: ' + m.text()); });
    page.on('pageerror', (e) => problems.push('page error: ' + e.message));
    page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} ${r.failure() && r.failure().errorText}`));
    page.on('response', (r) => {
      if (r.status() >= 400 && !(allow401 && r.status() === 401)) problems.push(`HTTP ${r.status()}: ${r.url()}`);
    });
    if (args.token && args.mode === 'check') allow401 = true;
    if (args.token && args.mode === 'screenshot')
      await page.evaluateOnNewDocument((t) => sessionStorage.setItem('moonmq.adminToken', t), args.token);
    await page.goto(args.url + '/', {waitUntil: 'load'});
    if (args.token && args.mode === 'check') await enterToken(page, args.token);
    await waitForBrokers(page, Number(args.brokers || 3));
    if (args.mode === 'screenshot') {
      await new Promise((r) => setTimeout(r, Number(args['wait-ms'] || 3000)));
      await page.screenshot({path: args.out, fullPage: true});
      log('screenshot written to', args.out);
    } else if (args.move) {
      await followMove(page, args.move);
    }
    // A few more polls: they must stay clean too.
    await new Promise((r) => setTimeout(r, 2000));
    if (problems.length) throw new Error('the page had errors:\n' + problems.join('\n'));
    log('no console error, page error or failed request');
    if (args['then-unreachable'] === 'yes') {
      log('stop the node now');
      await within('the unreachable state', 30000, page, () =>
        document.getElementById('status').dataset.state === 'unreachable'
        && document.getElementById('panels').classList.contains('stale'));
      log('the page says:', await page.$eval('#status', (s) => s.textContent));
    }
  } finally {
    clearTimeout(watchdog);
    await browser.close();
  }
}

main().then(() => { log('ok'); process.exit(0); },
            (e) => { console.error('console-test: FAILED:', e.message); process.exit(1); });
