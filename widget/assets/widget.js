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

  // Live updates. The feed is asked again every data-poll ms; the server
  // answers 304 while its build is unchanged. A push source (a feed
  // subscription over server-sent events) can call refresh() on each
  // event instead, with this loop kept as the fallback.
  var src = root.getAttribute('data-src');
  var every = parseInt(root.getAttribute('data-poll'), 10) || 15000;
  var etag = root.getAttribute('data-etag');
  var delay = every, timer = null, busy = false;

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

  function schedule(ms) {
    clearTimeout(timer);
    timer = setTimeout(refresh, ms);
  }
  function refresh() {
    if (busy || !src) return;
    if (document.hidden) return; // visibilitychange refreshes on return
    busy = true;
    fetch(src, { cache: 'no-cache', credentials: 'omit', headers: { 'Accept': 'text/html' } })
      .then(function (r) {
        if (!r.ok) throw new Error(String(r.status));
        var t = r.headers.get('ETag');
        if (t && t === etag) return null;
        etag = t;
        return r.text();
      })
      .then(function (html) {
        if (html !== null) apply(html);
        delay = every;
      })
      .catch(function () { delay = Math.min(delay * 2, 5 * 60 * 1000); })
      .then(function () { busy = false; schedule(delay); });
  }
  document.addEventListener('visibilitychange', function () {
    if (!document.hidden) refresh();
  });

  prepare(root);
  setInterval(function () { dates(root); }, 30000);
  schedule(every);
})();
