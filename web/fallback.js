// The page without WebGPU (Firefox headless, older browsers, a lost device): plain HTML controls for the model,
// the cluster and the parallel layout over the same app state the canvas edits, the results as text beside them
// (results_panel.js), and the configuration kept in the URL as a link, as on the full page.
const $ = (id) => document.getElementById(id);

export class FallbackControls {
  // onEdit(): after every applied edit (the page updates its text and its link); copyLink(): resolves to a note.
  constructor({ app, onEdit, copyLink }) {
    this.app = app;
    this.onEdit = onEdit;
    this.model = $('fallback-model');
    this.system = $('fallback-system');
    this.layout = $('fallback-layout');
    this.note = $('fallback-note');
    this.model.addEventListener('change', () => this.edited(this.app.selectPreset(this.model.value) ? '' : `unknown model ${this.model.value}`));
    this.system.addEventListener('change', () => this.edited(this.app.selectSystem(this.system.value) ? '' : `unknown cluster ${this.system.value}`));
    this.layout.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') this.applyLayout();
    });
    this.layout.addEventListener('change', () => this.applyLayout());
    $('fallback-copy-link').addEventListener('click', async () => {
      this.note.textContent = await copyLink();
    });
  }

  applyLayout() {
    const spec = this.layout.value.trim();
    if (spec === this.app.currentParallelSpec()) return;
    const error = this.app.setParallel(spec);
    this.edited(error ? `Layout: ${error}` : '');
    if (error) this.layout.value = spec; // keep what the user typed beside its error
  }

  edited(error) {
    this.onEdit();
    this.sync();
    this.note.textContent = error;
    this.layout.setAttribute('aria-invalid', String(error.startsWith('Layout')));
  }

  // Shows the app's state in the controls (after a link, a hash change or an edit).
  sync() {
    const c = this.app.choices();
    fill(this.model, c.models, c.model, 'custom model');
    fill(this.system, c.systems, c.system, 'no cluster');
    this.layout.value = this.app.currentParallelSpec();
  }
}

// The options of a picker, rebuilt only when the list changed; `current` "" shows a placeholder option.
function fill(select, items, current, placeholder) {
  const key = items.map((i) => i.file).join('|');
  if (select.dataset.key !== key) {
    select.replaceChildren(...items.map((i) => new Option(`${i.name} (${i.file.replace(/\.json$/, '')})`, i.file)));
    select.dataset.key = key;
  }
  const none = select.querySelector('option[value=""]');
  if (!current && !none) select.prepend(new Option(placeholder, ''));
  if (current && none) none.remove();
  select.value = current;
}
