// The page without WebGPU (Firefox headless, older browsers, a lost device): plain HTML controls for the model,
// the cluster and the parallel layout, and a settings field for every other entry of the link (precision, power
// limit, network levels, model fields, options), over the same app state the canvas edits; the results as text
// beside them (results_panel.js), and the configuration kept in the URL as a link, as on the full page.
const $ = (id) => document.getElementById(id);

// Link entries with controls of their own (the pickers and the layout field) or that belong to the canvas's views
// (the Serving tab, the Sweeps window, the open tab): the settings field shows every other entry of the link and
// keeps these as they are when it applies an edit.
const OWN_KEYS = new Set(['model', 'system', 'parallel']);
const isViewKey = (key) => key === 'view' || key === 'sweeps' || key === 'serve' || key.startsWith('sweep.') || key.startsWith('serve.');

// "v1;k=v;...;end" -> [[k, v], ...] (the text is the core's own, so every entry is key=value).
function entriesOf(link) {
  return link.split(';').slice(1, -1).map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]);
}

// The settings field's text -> [[k, v], ...], or throws Error naming the entry that is not key=value.
function parseSettings(text) {
  return text.split(/[;\n]/).map((e) => e.trim()).filter((e) => e !== '').map((e) => {
    const eq = e.indexOf('=');
    if (eq <= 0) throw new Error(`"${e}" is not key=value`);
    const key = e.slice(0, eq).trim();
    if (OWN_KEYS.has(key)) throw new Error(`"${key}" is set by its own control above, not here`);
    return [key, e.slice(eq + 1).trim()];
  });
}

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
    this.settings = $('fallback-settings');
    this.settings.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') this.applySettings();
    });
    this.settings.addEventListener('change', () => this.applySettings());
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

  // The settings field applied as a link: the current link's own and view entries with the typed ones. The core
  // checks them as it checks any link; a refused one puts the page back as it was (the link of before, applied
  // again) and shows the message beside the field, keeping what the user typed.
  applySettings() {
    const typed = this.settings.value;
    const before = this.app.linkState();
    if (!before.ok) {
      this.showError(`Settings: no link of this state to edit (${before.error})`, typed);
      return;
    }
    if (typed.trim() === this.settingsText(before.link).trim()) return;
    let entries;
    try {
      entries = parseSettings(typed);
    } catch (e) {
      this.showError(`Settings: ${e.message}`, typed);
      return;
    }
    const kept = entriesOf(before.link).filter(([k]) => OWN_KEYS.has(k) || isViewKey(k));
    const link = ['v1', ...[...kept, ...entries].map(([k, v]) => `${k}=${v}`), 'end'].join(';');
    const error = this.app.applyLink(link);
    if (error) {
      this.app.applyLink(before.link);
      this.showError(`Settings: ${error}`, typed);
      return;
    }
    this.edited('');
  }

  showError(message, typed) {
    this.onEdit();
    this.sync();
    this.note.textContent = message;
    this.settings.value = typed;
    this.settings.setAttribute('aria-invalid', 'true');
  }

  // The link's entries the settings field edits, as "k=v; k=v".
  settingsText(link) {
    return entriesOf(link).filter(([k]) => !OWN_KEYS.has(k) && !isViewKey(k)).map(([k, v]) => `${k}=${v}`).join('; ');
  }

  edited(error) {
    this.onEdit();
    this.sync();
    this.note.textContent = error;
    this.layout.setAttribute('aria-invalid', String(error.startsWith('Layout')));
    this.settings.setAttribute('aria-invalid', 'false');
  }

  // Shows the app's state in the controls (after a link, a hash change or an edit).
  sync() {
    const c = this.app.choices();
    fill(this.model, c.models, c.model, 'custom model');
    fill(this.system, c.systems, c.system, 'no cluster');
    this.layout.value = this.app.currentParallelSpec();
    const link = this.app.linkState();
    // A state that cannot be a link (a model from outside the presets) keeps the field as it was.
    if (link.ok) this.settings.value = this.settingsText(link.link);
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
