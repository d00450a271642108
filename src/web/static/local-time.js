// Times in the viewer's zone (src/web/time.ts): each <time class="local-time"> keeps its UTC text
// as the fallback and title, and shows the viewer's zone instead; each "3 min ago" beside one is
// counted from the server's clock when the page was made, plus the time since it loaded.
(() => {
  const loaded = Date.now();
  const absolute = new Intl.DateTimeFormat(undefined, {
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: 'numeric',
    minute: '2-digit',
    timeZoneName: 'short',
  });
  const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });
  const units = [
    ['year', 365 * 86400],
    ['month', 30 * 86400],
    ['week', 7 * 86400],
    ['day', 86400],
    ['hour', 3600],
    ['minute', 60],
  ];
  const ago = (seconds) => {
    for (const [unit, size] of units) {
      if (Math.abs(seconds) >= size) return relative.format(-Math.trunc(seconds / size), unit);
    }
    return relative.format(0, 'second');
  };
  const rewrite = () => {
    for (const el of document.querySelectorAll('time.local-time[datetime]')) {
      const at = new Date(el.getAttribute('datetime'));
      if (Number.isNaN(at.getTime())) continue;
      el.textContent = absolute.format(at);
    }
    for (const el of document.querySelectorAll('[data-ago-of][data-now]')) {
      const at = new Date(el.dataset.agoOf).getTime();
      const now = new Date(el.dataset.now).getTime() + (Date.now() - loaded);
      if (Number.isNaN(at) || Number.isNaN(now)) continue;
      el.textContent = ago((now - at) / 1000);
    }
  };
  rewrite();
  setInterval(rewrite, 60_000);
})();
