// The branding page's live preview: the band takes the name and colour as they are typed, with
// white or dark text, whichever reads (the server checks the WCAG AA contrast when saving).
(() => {
  const band = document.getElementById('preview-band');
  const name = document.getElementById('preview-name');
  const nameInput = document.getElementById('display_name');
  const colorInput = document.getElementById('accent_color');
  if (!band || !name || !nameInput || !colorInput) return;
  const channel = (v) => {
    const c = v / 255;
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  const lum = (hex) => {
    const n = Number.parseInt(hex.slice(1), 16);
    return 0.2126 * channel((n >> 16) & 255) + 0.7152 * channel((n >> 8) & 255) + 0.0722 * channel(n & 255);
  };
  const update = () => {
    const hex = /^#[0-9a-fA-F]{6}$/.test(colorInput.value) ? colorInput.value : band.dataset.accent;
    band.style.background = hex;
    band.style.color = 1.05 / (lum(hex) + 0.05) >= 4.5 ? '#ffffff' : '#1b1f24';
    name.textContent = nameInput.value.trim() || band.dataset.fallback;
  };
  nameInput.addEventListener('input', update);
  colorInput.addEventListener('input', update);
  update();
})();
