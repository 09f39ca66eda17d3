// tmefeed widget: relative dates, spoilers, expandable quotes, and live
// updates. Posts arrive rendered and sanitized by the server; this script
// only moves them into place.
(function () {
  'use strict';
  var root = document.getElementById('tf');
  if (!root) return;
  var live = document.getElementById('tf-live');

  // Relative dates, from each <time datetime>; the full date stays as its title.
  var rtf = window.Intl && Intl.RelativeTimeFormat ? new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' }) : null;
  var full = window.Intl ? new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' }) : null;
  var steps = [[60, 'second'], [60, 'minute'], [24, 'hour'], [7, 'day'], [4.345, 'week'], [12, 'month'], [Infinity, 'year']];
  function relative(date) {
    var v = (date.getTime() - Date.now()) / 1000;
    for (var i = 0; i < steps.length; i++) {
      if (Math.abs(v) < steps[i][0]) {
        var n = Math.round(v);
        if (steps[i][1] === 'second' && Math.abs(n) < 45) return rtf ? rtf.format(0, 'second') : 'now';
        return rtf ? rtf.format(n, steps[i][1]) : date.toLocaleString();
      }
      v /= steps[i][0];
    }
    return date.toLocaleString();
  }
  function dates(scope) {
    var ts = scope.querySelectorAll('time[datetime]');
    for (var i = 0; i < ts.length; i++) {
      var d = new Date(ts[i].getAttribute('datetime'));
      if (isNaN(d.getTime())) continue;
      ts[i].textContent = relative(d);
      if (full) ts[i].title = full.format(d);
    }
  }

  // Spoilers reveal on click or Enter/Space; long quotes open on click.
  function prepare(scope) {
    var sp = scope.querySelectorAll('tg-spoiler, .tg-spoiler');
    for (var i = 0; i < sp.length; i++) {
      sp[i].setAttribute('tabindex', '0');
      sp[i].setAttribute('role', 'button');
      sp[i].setAttribute('aria-label', 'Spoiler, press to reveal');
    }
    var q = scope.querySelectorAll('blockquote[expandable], blockquote.expandable');
    for (var j = 0; j < q.length; j++) {
      q[j].setAttribute('tabindex', '0');
      q[j].setAttribute('aria-expanded', 'false');
    }
    // An image that cannot load (blocked, expired) leaves its box, not a
    // broken-image icon.
    var imgs = scope.querySelectorAll('img');
    for (var k = 0; k < imgs.length; k++) {
      if (imgs[k].complete && imgs[k].naturalWidth === 0) imgs[k].classList.add('tf-img-failed');
      else imgs[k].addEventListener('error', function () { this.classList.add('tf-img-failed'); }, { once: true });
    }
    dates(scope);
  }
  function reveal(t) {
    var sp = t.closest && t.closest('tg-spoiler:not(.tf-shown), .tg-spoiler:not(.tf-shown)');
    if (sp) {
      sp.classList.add('tf-shown');
      sp.removeAttribute('role');
      sp.removeAttribute('aria-label');
      sp.removeAttribute('tabindex');
      return true;
    }
    var q = t.closest && t.closest('blockquote[expandable], blockquote.expandable');
    if (q) {
      var open = q.classList.toggle('tf-open');
      q.setAttribute('aria-expanded', open ? 'true' : 'false');
      return true;
    }
    return false;
  }
  root.addEventListener('click', function (e) {
    if (e.target.closest('a')) return;
    if (reveal(e.target)) e.preventDefault();
  });
  root.addEventListener('keydown', function (e) {
    if ((e.key === 'Enter' || e.key === ' ') && e.target.matches('tg-spoiler, .tg-spoiler, blockquote[expandable], blockquote.expandable')) {
      if (reveal(e.target)) e.preventDefault();
    }
  });

  // Live updates. The page subscribes to its channels' updates (GraphQL
  // feedUpdates as server-sent events, on this same origin) and refetches
  // its posts once per burst of them: the server renders and sanitizes
  // every post, and answers 304 while the feed's build is unchanged. The
  // same refetch runs on a timer: slowly while the stream is up, as a
  // safety net, and every data-poll ms when the stream cannot be had.
  var src = root.getAttribute('data-src');
  var every = parseInt(root.getAttribute('data-poll'), 10) || 15000;
  var etag = root.getAttribute('data-etag');
  var liveURL = root.getAttribute('data-live'), liveBody = root.getAttribute('data-live-body');
  var delay = every, timer = null, busy = false, again = false;
  var hold = 0; // no refresh before this time (ms): the server said when to come back
  var streaming = false; // a stream is open and delivering
  var SAFETY = 4; // the poll interval is this many times longer while streaming

  function textOf(el) {
    var t = el.querySelector('.tf-text, .tf-media, .tf-poll, .tf-preview');
    return t ? t.innerHTML : '';
  }
  function apply(html) {
    var doc = new DOMParser().parseFromString(html, 'text/html');
    var feed = doc.getElementById('tf-feed'), notes = doc.getElementById('tf-notes');
    var cur = document.getElementById('tf-feed'), curNotes = document.getElementById('tf-notes');
    if (!feed || !cur) return;
    if (notes && curNotes) curNotes.replaceWith(document.adoptNode(notes));
    // Keep what the reader is looking at in place when posts arrive above it.
    var anchor = null, anchorTop = 0;
    if (window.scrollY > 0) {
      for (var a = cur.firstElementChild; a; a = a.nextElementSibling) {
        var r = a.getBoundingClientRect();
        if (r.bottom > 0) { anchor = a; anchorTop = r.top; break; }
      }
    }
    var old = {};
    for (var c = cur.firstElementChild; c; c = c.nextElementSibling) old[c.getAttribute('data-key')] = c;
    var wanted = Array.prototype.slice.call(feed.children), keep = {};
    wanted.forEach(function (n) { keep[n.getAttribute('data-key')] = true; });
    Object.keys(old).forEach(function (k) { if (!keep[k]) old[k].remove(); });
    var added = 0, edited = 0, prev = null;
    wanted.forEach(function (n) {
      var k = n.getAttribute('data-key'), el = old[k];
      if (!el) {
        el = document.adoptNode(n);
        el.classList.add('tf-new');
        prepare(el);
        added++;
      } else if (el.getAttribute('data-rev') !== n.getAttribute('data-rev')) {
        var fresh = document.adoptNode(n), focused = el.contains(document.activeElement);
        if (textOf(fresh) !== textOf(el)) { fresh.classList.add('tf-updated'); edited++; }
        prepare(fresh);
        el.replaceWith(fresh);
        if (focused) fresh.focus({ preventScroll: true });
        el = fresh;
      }
      var next = prev ? prev.nextElementSibling : cur.firstElementChild;
      if (next !== el) cur.insertBefore(el, next);
      prev = el;
    });
    if (anchor && anchor.isConnected) window.scrollBy(0, anchor.getBoundingClientRect().top - anchorTop);
    var said = [];
    if (added) said.push(added === 1 ? '1 new post' : added + ' new posts');
    if (edited) said.push(edited === 1 ? '1 post edited' : edited + ' posts edited');
    if (said.length && live) live.textContent = said.join(', ');
  }

  function pollDelay() { return streaming ? Math.max(every * SAFETY, 60000) : every; }
  function weak(t) { return t.replace(/^W\//, ''); }
  function schedule(ms) {
    clearTimeout(timer);
    timer = setTimeout(refresh, ms);
  }
  function refresh() {
    if (!src) return;
    if (busy) { again = true; return; } // one more once this one is done
    if (document.hidden) { again = true; return; } // visibilitychange refreshes on return
    // Told to wait (429, 503): updates and the return of a hidden tab
    // wait too, rather than ask again before then.
    var wait = hold - Date.now();
    if (wait > 0) { schedule(wait); return; }
    busy = true;
    fetch(src, { cache: 'no-cache', credentials: 'omit', headers: { 'Accept': 'text/html' } })
      .then(function (r) {
        if (!r.ok) {
          var after = parseInt(r.headers.get('Retry-After'), 10);
          // Widgets of one dashboard share the limit: they come back spread
          // over a few seconds, not at once.
          if (after > 0) hold = Date.now() + after * 1000 + Math.random() * Math.min(after * 250, 10000);
          throw new Error(String(r.status));
        }
        // Compared weakly: a compressed answer carries the weak form
        // (W/"…") of the tag the page was given.
        var t = r.headers.get('ETag');
        if (t && etag && weak(t) === weak(etag)) return null;
        etag = t;
        return r.text();
      })
      .then(function (html) {
        if (html !== null) apply(html);
        delay = pollDelay();
      })
      .catch(function () { delay = Math.max(Math.min(Math.max(delay, every) * 2, 5 * 60 * 1000), hold - Date.now()); })
      .then(function () {
        busy = false;
        if (again) { again = false; schedule(0); } else schedule(delay);
      });
  }
  document.addEventListener('visibilitychange', function () {
    if (!document.hidden) { again = false; refresh(); }
  });

  // Updates come in bursts (a page refresh finds several): one refetch
  // for the burst, 400 ms after its last event and at most 2 s after its first.
  var burst = null, burstStart = 0;
  function soon() {
    var now = Date.now();
    if (!burst) burstStart = now;
    clearTimeout(burst);
    burst = setTimeout(function () { burst = null; refresh(); }, Math.max(0, Math.min(400, burstStart + 2000 - now)));
  }
  function removePost(post) {
    if (!post || !post.channel) return;
    var el = document.querySelector('#tf-feed > [data-key="' + String(post.channel).replace(/[^A-Za-z0-9_]/g, '') + '/' + (post.messageId | 0) + '"]');
    if (el) el.remove();
  }

  // The stream: fetch() with a reader, since EventSource cannot POST.
  // Frames are read as the SSE format says: lines end with CRLF, LF or CR;
  // "data" lines of one event join with newlines; lines starting with ":"
  // are comments (the server's keep-alives); a blank line ends an event.
  var failures = 0, opened = 0;
  var GIVE_UP = 4; // consecutive failures before polling takes over
  var QUIET = 60000; // nothing at all (not even a keep-alive) this long: the stream is dead
  function backoff() {
    var base = Math.min(1000 * Math.pow(2, failures), failures > GIVE_UP ? 5 * 60000 : 60000);
    return base / 2 + Math.random() * base / 2; // jitter: widgets of one server do not come back at once
  }
  function say(msg) { if (window.console) console.info('tmefeed widget: ' + msg); }
  function stop(why) { // the server refused the subscription itself: polling from now on
    streaming = false;
    say(why + '; polling every ' + Math.round(every / 1000) + ' s instead');
    schedule(every);
  }
  function retry(why, wait) {
    streaming = false;
    failures++;
    if (failures === GIVE_UP) say('live updates keep failing (' + why + '); polling every ' + Math.round(every / 1000) + ' s until they are back');
    if (failures >= GIVE_UP) schedule(Math.min(delay, every));
    setTimeout(subscribe, Math.max(wait || 0, backoff()));
  }
  function subscribe() {
    if (!liveURL || !liveBody || !window.fetch || !window.TextDecoder || !window.AbortController) return false;
    var ctl = new AbortController(), quiet = null, ended = false, endCode = '', retryAfter = 0;
    function alive() { clearTimeout(quiet); quiet = setTimeout(function () { ctl.abort(); }, QUIET); }
    alive();
    fetch(liveURL, {
      method: 'POST', credentials: 'omit', cache: 'no-store', signal: ctl.signal,
      headers: { 'Content-Type': 'application/json', 'Accept': 'text/event-stream' }, body: liveBody
    }).then(function (r) {
      var type = r.headers.get('Content-Type') || '';
      if (r.status === 429 || r.status === 503 || r.status >= 500) {
        retryAfter = (parseInt(r.headers.get('Retry-After'), 10) || 0) * 1000;
        throw new Error('HTTP ' + r.status);
      }
      if (!r.ok || type.indexOf('text/event-stream') !== 0 || !r.body) {
        ended = true;
        return r.text().then(function (t) { stop('live updates refused (HTTP ' + r.status + ': ' + t.slice(0, 200) + ')'); });
      }
      var reader = r.body.getReader(), dec = new TextDecoder(), buf = '', data = [], event = '';
      opened = Date.now();
      var first = true;
      function dispatch() {
        var kind = event || 'message', text = data.join('\n');
        data = []; event = '';
        if (kind === 'complete') { ended = true; return; }
        if (kind !== 'next' || !text) return;
        var msg;
        try { msg = JSON.parse(text); } catch (e) { return; }
        if (msg.errors && msg.errors.length) {
          var ext = msg.errors[0].extensions || {};
          endCode = ext.code || 'ERROR';
          if (ext.retryAfter) retryAfter = ext.retryAfter * 1000;
          if (!msg.data || !msg.data.feedUpdates) say('the stream says ' + endCode + ': ' + msg.errors[0].message);
          return;
        }
        var u = msg.data && msg.data.feedUpdates;
        if (!u) return;
        failures = 0; // a stream that delivers is a working one
        if (u.kind === 'REMOVED') removePost(u.post);
        soon();
      }
      function line(l) {
        if (l === '') { if (data.length || event) dispatch(); return; }
        if (l.charAt(0) === ':') return; // a comment: the keep-alive
        var i = l.indexOf(':'), field = i < 0 ? l : l.slice(0, i), value = i < 0 ? '' : l.slice(i + 1);
        if (value.charAt(0) === ' ') value = value.slice(1);
        if (field === 'data') data.push(value);
        else if (field === 'event') event = value;
      }
      function pump() {
        return reader.read().then(function (chunk) {
          alive();
          if (first) {
            first = false;
            streaming = true;
            // Updates made while no stream was open were missed: one refetch
            // catches up, then the timer is only the safety net.
            refresh();
          }
          if (chunk.done) { buf += '\n\n'; } else buf += dec.decode(chunk.value, { stream: true });
          var m, re = /\r\n|\r|\n/g, start = 0;
          while ((m = re.exec(buf))) {
            // A CR at the very end may be half of a CRLF: wait for the next chunk.
            if (m[0] === '\r' && m.index === buf.length - 1 && !chunk.done) break;
            line(buf.slice(start, m.index));
            start = re.lastIndex;
            if (ended) break;
          }
          buf = buf.slice(start);
          if (ended || chunk.done) return;
          return pump();
        });
      }
      return pump().then(function () {
        clearTimeout(quiet);
        ctl.abort();
        if (endCode === 'SHUTTING_DOWN' || endCode === 'SLOW_SUBSCRIBER' || endCode === 'RATE_LIMITED' || endCode === '' || endCode === 'INTERNAL_SERVER_ERROR') {
          // The server went away, fell behind with us or is busy; or the
          // stream just ended. Come back (elsewhere), and resync then.
          if (Date.now() - opened > QUIET) failures = 0;
          retry(endCode || 'the stream ended', retryAfter);
        } else {
          stop('live updates refused (' + endCode + ')');
        }
      });
    }).catch(function (err) {
      clearTimeout(quiet);
      if (ended) return;
      retry(err && err.message || 'network error', retryAfter);
    });
    return true;
  }

  prepare(root);
  setInterval(function () { dates(root); }, 30000);
  if (subscribe()) {
    streaming = true; // until it fails: the first poll waits for the safety net
    schedule(pollDelay());
  } else {
    schedule(every);
  }
})();
