// Copy buttons beside what a person copies (a secret shown once, a URL, an id): each
// <input class="copy"> and each [data-copy] gets a "Copy" button. Without script the text stays
// selectable (a read-only field, or code), so nothing depends on this file.
(() => {
  const copyOf = (el) => (el instanceof HTMLInputElement ? el.value : (el.textContent ?? '').trim());
  for (const el of document.querySelectorAll('input.copy, [data-copy]')) {
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'secondary small copy-button';
    button.textContent = 'Copy';
    const what =
      el.getAttribute('aria-label') || el.labels?.[0]?.textContent?.trim() || el.dataset.copy || '';
    if (what) button.setAttribute('aria-label', `Copy ${what}`);
    const status = document.createElement('span');
    status.className = 'copy-status muted small';
    status.setAttribute('role', 'status');
    button.addEventListener('click', async () => {
      try {
        await navigator.clipboard.writeText(copyOf(el));
        status.textContent = 'Copied';
      } catch {
        // No clipboard (an insecure origin, a refused permission): select it for the keyboard.
        if (el instanceof HTMLInputElement) el.select();
        else window.getSelection()?.selectAllChildren(el);
        status.textContent = 'Selected: press Ctrl+C or ⌘C';
      }
    });
    el.after(button, status);
  }
})();
