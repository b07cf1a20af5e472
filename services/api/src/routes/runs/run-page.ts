import type { RunProgress, StageProgress } from './run-progress.js';

/**
 * The run page: a server-rendered shell (the run as it is now, readable without script) and one
 * small inline script that follows `GET /runs/:runId/events`. No framework and nothing from
 * another origin: the Content-Security-Policy below allows only this page's own nonce'd script
 * and style, and connections to its own origin.
 */

export function runPageCsp(nonce: string): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src 'nonce-${nonce}'`,
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

function escapeHtml(value: string): string {
  return value
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

function stageRow(stage: StageProgress): string {
  const value = stage.total === null ? '' : ` value="${stage.done}"`;
  const max = Math.max(stage.total ?? 0, 1);
  const count = stage.total === null ? `${stage.done}` : `${stage.done} / ${stage.total}`;
  return `<li class="stage" data-stage="${stage.stage}" data-state="${stage.state}">
  <span class="badge b-${stage.stage}">${stage.stage}</span>
  <span class="stage-name">${escapeHtml(stage.name)}</span>
  <progress max="${max}"${value} aria-label="${escapeHtml(stage.name)}"></progress>
  <span class="count">${escapeHtml(count)}</span>
  <span class="note">${escapeHtml(stage.note)}</span>
</li>`;
}

/** Who is on the run: each worker holding its jobs, dead ones first to catch the eye. */
function workersLine(workers: RunProgress['workers']): string {
  if (workers.length === 0) return 'No worker holds a job of this run.';
  return `Workers: ${workers
    .map(
      (w) =>
        `<span class="worker" data-status="${escapeHtml(w.status)}">${escapeHtml(w.worker_id)} (${w.jobs} ${w.jobs === 1 ? 'job' : 'jobs'}${w.status === 'running' ? '' : `, ${escapeHtml(w.status)}`})</span>`,
    )
    .join(', ')}`;
}

function when(iso: string | null): string {
  return iso === null ? '—' : escapeHtml(iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z'));
}

export function renderRunPage(progress: RunProgress, nonce: string): string {
  const { run } = progress;
  const title = `${run.run_id} · ${run.site_name ?? 'deleted site'}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · Gleaner</title>
<style nonce="${nonce}">${RUN_PAGE_STYLE}</style>
</head>
<body>
<main id="run" data-run-id="${escapeHtml(run.run_id)}">
<header>
  <h1><span class="site" id="site">${escapeHtml(run.site_name ?? 'deleted site')}</span>
    <code id="run-id">${escapeHtml(run.run_id)}</code></h1>
  <span class="status" id="status" data-status="${escapeHtml(run.status)}">${escapeHtml(run.status)}</span>
  <button type="button" id="cancel"${progress.ended ? ' disabled' : ''}>Cancel run</button>
</header>
<dl class="meta">
  <dt>trigger</dt><dd id="trigger">${escapeHtml(run.trigger)}</dd>
  <dt>started</dt><dd id="started">${when(run.started_at)}</dd>
  <dt>finished</dt><dd id="finished">${when(run.finished_at)}</dd>
  <dt>connection</dt><dd id="connection">${progress.ended ? 'ended' : 'connecting'}</dd>
</dl>
<p class="message" id="message"${run.message ? '' : ' hidden'}>${escapeHtml(run.message ?? '')}</p>
<p class="message error" id="problem" hidden></p>
<ol class="stages" id="stages">
${progress.stages.map(stageRow).join('\n')}
</ol>
<p class="workers" id="workers">${workersLine(progress.workers)}</p>
<section class="log-box">
  <div class="log" id="log" role="log" aria-live="polite" tabindex="0"></div>
  <button type="button" id="new-lines" hidden>new lines below</button>
</section>
</main>
<script nonce="${nonce}">${RUN_PAGE_SCRIPT}</script>
</body>
</html>
`;
}

const RUN_PAGE_STYLE = `
:root { color-scheme: light dark; --fg: #1d1f23; --bg: #f7f7f5; --muted: #6b6f76; --line: #e2e2de;
  --ing: #3b6fd8; --crl: #a35bd1; --ext: #1f9d6b; --llm: #c8782a; --bad: #c93c3c; --warn: #b58100; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e6e3; --bg: #17181b; --muted: #9a9ea6;
  --line: #2c2e33; } }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
main { max-width: 1100px; margin: 0 auto; padding: 20px; }
header { display: flex; align-items: center; gap: 12px; flex-wrap: wrap; }
h1 { font-size: 20px; margin: 0; flex: 1; display: flex; gap: 10px; align-items: baseline; }
code, .log { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
h1 code { font-size: 14px; color: var(--muted); }
.status { padding: 3px 10px; border-radius: 999px; font-weight: 600; background: var(--line); }
.status[data-status="running"], .status[data-status="queued"] { background: #dbe6fb; color: #1f4aa8; }
.status[data-status="succeeded"] { background: #d5f2e3; color: #13774d; }
.status[data-status="partial"] { background: #fbefd0; color: #8a6100; }
.status[data-status="failed"], .status[data-status="cancelled"] { background: #f8dcdc; color: #a12a2a; }
button { font: inherit; padding: 5px 12px; border-radius: 6px; border: 1px solid var(--line);
  background: transparent; color: var(--fg); cursor: pointer; }
#cancel:not([disabled]) { border-color: var(--bad); color: var(--bad); }
button[disabled] { opacity: .45; cursor: default; }
.workers { color: var(--muted); margin: 0 0 12px; }
.worker[data-status="dead"] { color: var(--bad); font-weight: 600; }
.meta { display: grid; grid-template-columns: repeat(4, auto 1fr); gap: 2px 8px; margin: 14px 0;
  color: var(--muted); }
.meta dt { font-weight: 600; } .meta dd { margin: 0; }
.message { margin: 6px 0; } .error { color: var(--bad); }
.stages { list-style: none; padding: 0; margin: 12px 0 18px; display: grid; gap: 8px; }
.stage { display: grid; grid-template-columns: 44px 100px 1fr 110px 200px; gap: 10px;
  align-items: center; }
.stage progress { width: 100%; height: 12px; accent-color: var(--ing); }
.stage[data-stage="CRL"] progress { accent-color: var(--crl); }
.stage[data-stage="EXT"] progress { accent-color: var(--ext); }
.stage[data-state="stopped"] progress { accent-color: var(--bad); }
.stage .count { text-align: right; font-variant-numeric: tabular-nums; }
.stage .note { color: var(--muted); }
.badge { display: inline-block; min-width: 36px; text-align: center; font: 600 11px/18px
  ui-monospace, monospace; color: #fff; border-radius: 4px; background: var(--muted); }
.b-ING { background: var(--ing); } .b-CRL { background: var(--crl); }
.b-EXT { background: var(--ext); } .b-LLM { background: var(--llm); }
.log-box { position: relative; }
.log { height: 420px; overflow-y: auto; border: 1px solid var(--line); border-radius: 6px;
  padding: 6px 0; font-size: 12.5px; background: color-mix(in srgb, var(--bg) 70%, #fff 30%); }
@media (prefers-color-scheme: dark) { .log { background: #111214; } }
.line { display: flex; gap: 8px; padding: 1px 10px; white-space: pre-wrap; word-break: break-word; }
.line time { color: var(--muted); flex: none; }
.line .badge { flex: none; }
.line .fields { color: var(--muted); }
.line.lvl-debug .msg { opacity: .85; }
.line.lvl-warn .msg { color: var(--warn); }
.line.lvl-error .msg, .line.lvl-fatal .msg { color: var(--bad); font-weight: 600; }
#new-lines { position: absolute; right: 18px; bottom: 12px; background: var(--ing); color: #fff;
  border: 0; box-shadow: 0 2px 6px rgba(0,0,0,.25); }
`;

/**
 * Written for the browser as it is: no build step, ES2017, only textContent for what the run
 * logged (titles and URLs come from the sites scraped).
 */
const RUN_PAGE_SCRIPT = `
(function () {
  'use strict';
  var root = document.getElementById('run');
  var runId = root.getAttribute('data-run-id');
  var logBox = document.getElementById('log');
  var hint = document.getElementById('new-lines');
  var cancelButton = document.getElementById('cancel');
  var MAX_LINES = 5000;
  var unseen = 0;
  var ended = false;
  var current = null;

  function byId(id) { return document.getElementById(id); }
  function text(id, value) { byId(id).textContent = value; }
  function when(iso) { return iso ? iso.replace('T', ' ').replace(/\\.\\d+Z$/, 'Z') : '\\u2014'; }

  function renderStage(stage) {
    var row = document.querySelector('.stage[data-stage="' + stage.stage + '"]');
    if (!row) return;
    row.setAttribute('data-state', stage.state);
    var bar = row.querySelector('progress');
    bar.max = Math.max(stage.total === null ? 0 : stage.total, 1);
    if (stage.total === null) bar.removeAttribute('value');
    else bar.value = stage.done;
    row.querySelector('.count').textContent =
      stage.total === null ? String(stage.done) : stage.done + ' / ' + stage.total;
    row.querySelector('.note').textContent = stage.note;
  }

  function renderWorkers(workers) {
    var line = byId('workers');
    line.textContent = '';
    if (workers.length === 0) {
      line.textContent = 'No worker holds a job of this run.';
      return;
    }
    line.appendChild(document.createTextNode('Workers: '));
    workers.forEach(function (worker, index) {
      if (index > 0) line.appendChild(document.createTextNode(', '));
      var span = document.createElement('span');
      span.className = 'worker';
      span.setAttribute('data-status', worker.status);
      span.textContent = worker.worker_id + ' (' + worker.jobs + (worker.jobs === 1 ? ' job' : ' jobs') +
        (worker.status === 'running' ? '' : ', ' + worker.status) + ')';
      line.appendChild(span);
    });
  }

  function render(progress) {
    current = progress;
    var run = progress.run;
    var status = byId('status');
    status.textContent = run.status;
    status.setAttribute('data-status', run.status);
    text('site', run.site_name || 'deleted site');
    text('started', when(run.started_at));
    text('finished', when(run.finished_at));
    var message = byId('message');
    message.textContent = run.message || '';
    message.hidden = !run.message;
    progress.stages.forEach(renderStage);
    renderWorkers(progress.workers || []);
    cancelButton.disabled = progress.ended;
  }

  function isAtBottom() {
    return logBox.scrollHeight - logBox.scrollTop - logBox.clientHeight < 8;
  }

  function two(n) { return n < 10 ? '0' + n : String(n); }
  function clock(ms) {
    var d = new Date(ms);
    var millis = String(d.getMilliseconds());
    while (millis.length < 3) millis = '0' + millis;
    return two(d.getHours()) + ':' + two(d.getMinutes()) + ':' + two(d.getSeconds()) + '.' + millis;
  }

  function lineElement(line) {
    var row = document.createElement('div');
    row.className = 'line lvl-' + line.level;
    row.setAttribute('data-stage', line.stage);
    var time = document.createElement('time');
    time.dateTime = new Date(line.time).toISOString();
    time.textContent = clock(line.time);
    var badge = document.createElement('span');
    badge.className = 'badge b-' + line.stage;
    badge.textContent = line.stage;
    var msg = document.createElement('span');
    msg.className = 'msg';
    msg.textContent = line.err ? line.msg + ': ' + line.err : line.msg;
    row.appendChild(time);
    row.appendChild(badge);
    row.appendChild(msg);
    if (line.fields) {
      var fields = document.createElement('span');
      fields.className = 'fields';
      fields.textContent = Object.keys(line.fields).filter(function (key) {
        return key !== 'stage';
      }).map(function (key) { return key + '=' + line.fields[key]; }).join(' ');
      row.appendChild(fields);
    }
    return row;
  }

  function appendLines(lines) {
    var stick = isAtBottom();
    var fragment = document.createDocumentFragment();
    lines.forEach(function (line) { fragment.appendChild(lineElement(line)); });
    logBox.appendChild(fragment);
    var extra = logBox.childElementCount - MAX_LINES;
    while (extra-- > 0) logBox.removeChild(logBox.firstElementChild);
    if (stick) {
      logBox.scrollTop = logBox.scrollHeight;
    } else {
      unseen += lines.length;
      hint.textContent = unseen + (unseen === 1 ? ' new line' : ' new lines') + ' below';
      hint.hidden = false;
    }
  }

  logBox.addEventListener('scroll', function () {
    if (isAtBottom()) {
      unseen = 0;
      hint.hidden = true;
    }
  });
  hint.addEventListener('click', function () {
    logBox.scrollTop = logBox.scrollHeight;
  });

  function showProblem(message) {
    var problem = byId('problem');
    problem.textContent = message;
    problem.hidden = !message;
  }

  cancelButton.addEventListener('click', function () {
    if (!window.confirm('Cancel run ' + runId + '?')) return;
    cancelButton.disabled = true;
    showProblem('');
    fetch('../jobs/scrape/' + encodeURIComponent(runId) + '/cancel', {
      method: 'POST',
      headers: { accept: 'application/json' },
      credentials: 'same-origin'
    }).then(function (response) {
      return response.json().then(function (body) {
        if (!response.ok) {
          showProblem('Not cancelled: ' + (body.detail || body.title || response.status));
          cancelButton.disabled = current ? current.ended : false;
        }
      });
    }).catch(function (error) {
      showProblem('Not cancelled: ' + error.message);
      cancelButton.disabled = current ? current.ended : false;
    });
  });

  var events = new EventSource(encodeURIComponent(runId) + '/events');
  events.addEventListener('open', function () { text('connection', 'live'); });
  events.addEventListener('progress', function (event) { render(JSON.parse(event.data)); });
  events.addEventListener('log', function (event) { appendLines(JSON.parse(event.data)); });
  events.addEventListener('end', function (event) {
    ended = true;
    var data = JSON.parse(event.data);
    if (data.run) render(data);
    else showProblem(data.error || 'this run can no longer be followed');
    text('connection', 'ended');
    events.close();
  });
  events.addEventListener('error', function () {
    if (!ended) text('connection', 'reconnecting');
  });
})();
`;
