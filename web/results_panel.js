// The results as DOM text beside the canvas: selectable, readable by screen readers (the <pre> is aria-live
// even while the panel is closed), and copyable as text, JSON or Markdown. The text is the app's MirrorText (what
// `stagecraft estimate` then `summary` print); JSON and Markdown come from the same results (app.resultJson,
// app.resultMarkdown), so every figure is the one the panels show.
//
// Keyboard: the panel's toggle button follows the canvas in the tab order. Tab on the canvas goes to Dear ImGui
// while one of its fields is being edited (to move between fields) and leaves the canvas otherwise (Escape ends an
// edit); keys typed in the panel never reach ImGui (input.js).

const $ = (id) => document.getElementById(id);

// Clipboard API where allowed (secure context, a user gesture); else a selection and execCommand('copy').
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = document.createElement('textarea');
    area.value = text;
    area.setAttribute('readonly', '');
    area.style.position = 'fixed';
    area.style.opacity = '0';
    document.body.append(area);
    area.select();
    let ok = false;
    try {
      ok = document.execCommand('copy');
    } catch {
      ok = false;
    }
    area.remove();
    return ok;
  }
}

export class ResultsPanel {
  constructor(app) {
    this.app = app;
    this.panel = $('results-panel');
    this.toolbar = $('results-toolbar');
    this.toggle = $('results-toggle');
    this.text = $('results');
    this.note = $('results-note');
    this.version = -1;
    this.toggle.addEventListener('click', () => this.setOpen(this.toolbar.hidden));
    $('results-close').addEventListener('click', () => {
      this.setOpen(false);
      this.toggle.focus();
    });
    for (const [id, kind] of [['copy-text', 'text'], ['copy-json', 'JSON'], ['copy-markdown', 'Markdown']])
      $(id).addEventListener('click', () => this.copy(kind));
  }

  // Closed, the panel is only visually hidden (its text stays in the accessibility tree) and its buttons leave the
  // tab order. The page without WebGPU keeps it open (it is the page's only view of the results).
  setOpen(open) {
    this.toolbar.hidden = !open;
    this.panel.classList.toggle('visually-hidden', !open);
    this.text.tabIndex = open ? 0 : -1; // the text scrolls with the keyboard when shown
    this.toggle.setAttribute('aria-expanded', String(open));
    this.toggle.textContent = open ? 'Hide text results' : 'Text results';
    if (open) this.text.scrollTop = 0;
  }

  contentOf(kind) {
    if (kind === 'JSON') return this.app.resultJson();
    if (kind === 'Markdown') return this.app.resultMarkdown();
    return this.app.mirrorText();
  }

  async copy(kind) {
    const ok = await copyText(this.contentOf(kind));
    this.note.textContent = ok ? `Copied as ${kind}.` : `Could not copy: select the text and copy it by hand.`;
  }

  // Every frame (and after each edit on the page without WebGPU): touch the DOM only when the text changed.
  update() {
    const v = this.app.mirrorVersion();
    if (v === this.version) return;
    this.version = v;
    this.text.textContent = this.app.mirrorText();
    this.note.textContent = '';
  }
}
