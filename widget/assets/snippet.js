// The snippet page: the preview and the <iframe> code follow the form
// without a reload. The code is the line the server writes (iframeCode).
(function () {
  'use strict';
  var form = document.getElementById('tf-form');
  // With API keys on the server mints each widget's key: the form is sent.
  if (!form || form.hasAttribute('data-mint')) return;
  var out = document.getElementById('tf-out'), code = document.getElementById('tf-code');
  var frame = document.getElementById('tf-preview'), err = document.getElementById('tf-error');
  var copied = document.getElementById('tf-copied');
  function esc(s) {
    return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&#34;').replace(/'/g, '&#39;');
  }
  function size(s, percentOK) {
    if (percentOK && s === '100%') return true;
    return /^\d+$/.test(s) && +s >= 200 && +s <= 4000;
  }
  function update() {
    var f = form.elements;
    var names = f.channels.value.split(',').map(function (s) { return s.trim().replace(/^@/, ''); }).filter(Boolean);
    var w = f.width.value.trim(), h = f.height.value.trim();
    var problem = '';
    if (!names.length) problem = 'channels: list at least one channel';
    else if (!names.every(function (n) { return /^[A-Za-z][A-Za-z0-9_]{3,31}$/.test(n); })) problem = 'channels: usernames are 4 to 32 letters, digits and underscores';
    else if (!size(w, true) || !size(h, false)) problem = 'width: want 200 to 4000 pixels or 100%; height: 200 to 4000 pixels';
    err.textContent = problem;
    err.hidden = !problem;
    if (problem) return;
    var q = 'channels=' + names.map(encodeURIComponent).join(',');
    var limit = f.limit.value.trim();
    if (limit && limit !== '20') q += '&limit=' + encodeURIComponent(limit);
    if (f.order.value !== 'newest') q += '&order=' + encodeURIComponent(f.order.value);
    var hidden = form.querySelectorAll('input[type=hidden]');
    for (var i = 0; i < hidden.length; i++) q += '&' + encodeURIComponent(hidden[i].name) + '=' + encodeURIComponent(hidden[i].value);
    if (f.theme.value !== 'auto') q += '&theme=' + encodeURIComponent(f.theme.value);
    var src = location.origin + '/embed?' + q;
    var title = 'Telegram: @' + names.join(', @');
    code.value = '<iframe src="' + esc(src) + '" title="' + esc(title) + '" width="' + esc(w) + '" height="' + esc(h) +
      '" style="border:0;max-width:100%" loading="lazy" referrerpolicy="no-referrer"></iframe>';
    if (frame.getAttribute('src') !== src) frame.setAttribute('src', src);
    frame.setAttribute('width', w);
    frame.setAttribute('height', h);
    out.hidden = false;
  }
  var pending = null;
  form.addEventListener('input', function () {
    clearTimeout(pending);
    pending = setTimeout(update, 400);
  });
  form.addEventListener('change', update);
  form.addEventListener('submit', function (e) { e.preventDefault(); update(); });
  document.getElementById('tf-copy').addEventListener('click', function () {
    code.select();
    var done = function () { copied.textContent = 'Copied'; };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(code.value).then(done, function () { document.execCommand('copy'); done(); });
    } else {
      document.execCommand('copy');
      done();
    }
  });
  if (code.value) update();
})();
