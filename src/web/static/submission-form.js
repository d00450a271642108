// The App Store submission form: a live character count under each scope justification, and only
// the justifications of the scopes ticked shown. The form works without it; the server checks all.
(() => {
  const form = document.getElementById('submission-form');
  if (!form) return;

  const count = (area) => {
    const out = document.getElementById(area.getAttribute('aria-describedby'));
    if (!out) return;
    const length = [...area.value.trim()].length;
    const min = Number(area.dataset.min);
    const max = Number(area.dataset.max);
    out.textContent = `${length} / ${max} characters${length < min ? ` (at least ${min})` : ''}`;
    out.classList.toggle('bad', length < min || length > max);
  };

  for (const area of form.querySelectorAll('textarea[data-max]')) {
    count(area);
    area.addEventListener('input', () => count(area));
  }

  const showRequested = () => {
    for (const box of form.querySelectorAll('input[name="scopes"]')) {
      const block = form.querySelector(`.justification[data-scope="${box.value}"]`);
      if (block) block.hidden = !box.checked;
    }
  };
  for (const box of form.querySelectorAll('input[name="scopes"]')) {
    box.addEventListener('change', showRequested);
  }
  showRequested();
})();
