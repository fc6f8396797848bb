// DOM input -> Dear ImGui (through the WebApp Embind object).
//
// Pointer and wheel events come from the canvas; keys from the window. Text goes through a hidden
// <input> that is focused whenever ImGui wants text (io.WantTextInput), so IMEs, dead keys and mobile
// keyboards work. Clipboard: ImGui's copies are pushed to navigator.clipboard; paste events put the
// pasted text into ImGui's clipboard and replay the paste shortcut.

const MOD_CTRL = 1;
const MOD_SHIFT = 2;
const MOD_ALT = 4;
const MOD_META = 8;

// ImGuiMouseCursor -> CSS cursor.
const CURSORS = ['default', 'text', 'move', 'ns-resize', 'ew-resize', 'nesw-resize', 'nwse-resize', 'pointer', 'not-allowed'];

// Keys whose browser default action (focus moves, scrolling, history back...) must not happen while
// ImGui uses the keyboard. Other keys (F5, Ctrl+R, ...) keep their browser meaning.
const CAPTURED_CODES = new Set([
  'Tab', 'ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown', 'PageUp', 'PageDown', 'Home', 'End',
  'Backspace', 'Delete', 'Enter', 'NumpadEnter', 'Escape', 'Space',
]);
const CAPTURED_SHORTCUTS = new Set(['a', 'z', 'y']); // select all, undo, redo

const modsOf = (e) =>
  (e.ctrlKey ? MOD_CTRL : 0) | (e.shiftKey ? MOD_SHIFT : 0) | (e.altKey ? MOD_ALT : 0) | (e.metaKey ? MOD_META : 0);

const isPrintable = (key) => typeof key === 'string' && key.length > 0 && [...key].length === 1 && key >= ' ';

export function isApplePlatform() {
  const p = navigator.userAgentData?.platform ?? navigator.platform ?? '';
  return /mac|iphone|ipad|ipod/i.test(p);
}

export class Input {
  constructor({ canvas, textInput, app }) {
    this.canvas = canvas;
    this.textInput = textInput;
    this.app = app;
    this.mac = isApplePlatform();
    this.mods = 0;
    this.composing = false;
    this.downKeys = new Map(); // code -> key used at keydown (so keyup releases the same ImGuiKey)
    this.clipboardSerial = app.clipboardSerial();
    this.cursor = '';
    this.imeKey = '';
    app.setMacBehaviors(this.mac);
    this.attach();
  }

  attach() {
    const c = this.canvas;
    const t = this.textInput;
    c.addEventListener('pointerdown', (e) => this.onPointerDown(e));
    c.addEventListener('pointermove', (e) => this.onPointerMove(e));
    c.addEventListener('pointerup', (e) => this.onPointerUp(e));
    c.addEventListener('pointercancel', (e) => this.onPointerUp(e));
    c.addEventListener('pointerleave', (e) => {
      if (e.buttons === 0) this.app.mouseLeave();
    });
    // We manage focus ourselves (canvas or hidden input); no text selection or focus stealing.
    c.addEventListener('mousedown', (e) => e.preventDefault());
    c.addEventListener('contextmenu', (e) => e.preventDefault());
    c.addEventListener('wheel', (e) => this.onWheel(e), { passive: false });

    window.addEventListener('keydown', (e) => this.onKeyDown(e));
    window.addEventListener('keyup', (e) => this.onKeyUp(e));
    window.addEventListener('blur', () => this.onBlur());
    window.addEventListener('focus', () => this.app.focus(true));
    document.addEventListener('paste', (e) => this.onPaste(e));

    t.addEventListener('compositionstart', () => {
      this.composing = true;
    });
    t.addEventListener('compositionend', (e) => {
      this.composing = false;
      if (e.data) this.app.inputText(e.data);
      t.value = '';
    });
    t.addEventListener('input', (e) => {
      if (this.composing || e.isComposing) return;
      if (t.value) this.app.inputText(t.value);
      t.value = '';
    });
    // Virtual keyboards that do not send key events for Backspace/Enter still send beforeinput.
    t.addEventListener('beforeinput', (e) => {
      if (e.inputType === 'deleteContentBackward' && !this.composing) {
        e.preventDefault();
        this.tapKey('Backspace', 'Backspace');
      } else if (e.inputType === 'insertLineBreak' || e.inputType === 'insertParagraph') {
        e.preventDefault();
        this.tapKey('Enter', 'Enter');
      }
    });
  }

  tapKey(code, key, mods = this.mods) {
    this.app.keyEvent(code, key, true, mods);
    this.app.keyEvent(code, key, false, mods);
    this.app.modifiers(this.mods);
  }

  pos(e) {
    const r = this.canvas.getBoundingClientRect();
    this.app.mousePos(e.clientX - r.left, e.clientY - r.top);
  }

  onPointerDown(e) {
    this.app.mouseSource(e.pointerType === 'touch' ? 1 : e.pointerType === 'pen' ? 2 : 0);
    this.pos(e);
    this.app.mouseButton(e.button, true);
    try {
      this.canvas.setPointerCapture(e.pointerId);
    } catch {
      // the pointer may already be gone
    }
    if (document.activeElement !== this.textInput) this.canvas.focus({ preventScroll: true });
  }

  onPointerMove(e) {
    this.app.mouseSource(e.pointerType === 'touch' ? 1 : e.pointerType === 'pen' ? 2 : 0);
    this.pos(e);
  }

  onPointerUp(e) {
    this.pos(e);
    this.app.mouseButton(e.button < 0 ? 0 : e.button, false);
    // Mobile keyboards only open when focus moves inside a user gesture: ImGui activated the text
    // field on pointerdown (one frame ago), so focus the hidden input now.
    if (this.app.wantTextInput()) this.focusTextInput();
  }

  onWheel(e) {
    e.preventDefault(); // no page scroll / pinch zoom over the canvas
    const scale = e.deltaMode === 1 ? 1 / 3 : e.deltaMode === 2 ? 80 : 1 / 100;
    this.pos(e);
    this.app.mouseWheel(-e.deltaX * scale, -e.deltaY * scale);
  }

  // Focus is on the page's DOM controls (the results panel, the fallback's pickers): their keys are theirs.
  focusOutside() {
    const a = document.activeElement;
    return a !== null && a !== document.body && a !== this.canvas && a !== this.textInput;
  }

  onKeyDown(e) {
    if (this.composing || e.isComposing || e.keyCode === 229) return; // the IME owns the key
    if (this.focusOutside()) return;
    // Tab moves between ImGui's fields while one is edited; otherwise it leaves the canvas (to the results panel).
    if (e.code === 'Tab' && !this.app.wantTextInput()) return;
    const mods = modsOf(e);
    this.mods = mods;
    // AltGr on Windows reports Ctrl+Alt: that is typing, not a shortcut.
    const shortcut = (e.ctrlKey || e.metaKey) && !(e.ctrlKey && e.altKey);
    const letter = e.key.length === 1 ? e.key.toLowerCase() : '';
    if (shortcut && !e.altKey && (letter === 'v' || e.code === 'KeyV')) {
      // Paste: the paste event brings the text, then replays Ctrl/Cmd+V into ImGui (onPaste).
      this.app.modifiers(mods);
      return;
    }
    const key = this.app.keyEvent(e.code, e.key, true, mods) ? e.key : null;
    if (key !== null) this.downKeys.set(e.code, e.key);
    const typing = document.activeElement === this.textInput;
    if (isPrintable(e.key) && !shortcut) {
      // Text: when the hidden input has focus its input event delivers it (IME, dead keys);
      // otherwise take it from the key event.
      if (!typing) {
        this.app.inputText(e.key);
        e.preventDefault();
      }
      return;
    }
    const wantKeys = typing || this.app.wantCaptureKeyboard() || document.activeElement === this.canvas;
    if (!wantKeys || key === null) return;
    if (CAPTURED_CODES.has(e.code) || (shortcut && CAPTURED_SHORTCUTS.has(letter))) e.preventDefault();
  }

  onKeyUp(e) {
    if (!this.downKeys.has(e.code) && this.focusOutside()) return; // a key pressed in the DOM controls
    const mods = modsOf(e);
    this.mods = mods;
    const key = this.downKeys.get(e.code) ?? e.key;
    this.downKeys.delete(e.code);
    if (!this.app.keyEvent(e.code, key, false, mods)) this.app.modifiers(mods);
  }

  onBlur() {
    this.downKeys.clear();
    this.mods = 0;
    this.app.focus(false);
  }

  onPaste(e) {
    const text = e.clipboardData?.getData('text/plain') ?? '';
    e.preventDefault(); // the hidden input must not receive it as well
    if (!text) return;
    this.app.setClipboard(text);
    const shortcutMod = this.mac ? MOD_META : MOD_CTRL;
    this.tapKey('KeyV', 'v', (this.mods & (MOD_SHIFT | MOD_ALT)) | shortcutMod);
  }

  focusTextInput() {
    if (document.activeElement !== this.textInput) this.textInput.focus({ preventScroll: true });
  }

  // Called after every ImGui frame: text-input focus and IME position, cursor shape, clipboard.
  afterFrame() {
    const app = this.app;
    const t = this.textInput;
    if (this.focusOutside()) {
      // the user moved to the DOM controls: an ImGui field still active keeps its text, not the focus
    } else if (app.wantTextInput()) {
      const ime = app.ime();
      if (ime.visible) {
        const k = `${ime.x}|${ime.y}|${ime.lineHeight}`;
        if (k !== this.imeKey) {
          this.imeKey = k;
          t.style.left = `${ime.x}px`;
          t.style.top = `${ime.y}px`;
          t.style.height = `${Math.max(1, ime.lineHeight)}px`;
        }
      }
      this.focusTextInput();
    } else if (document.activeElement === t) {
      t.blur(); // closes mobile keyboards
      t.value = '';
      this.canvas.focus({ preventScroll: true });
    }

    const c = app.mouseCursor();
    const cursor = c < 0 ? 'none' : CURSORS[c] ?? 'default';
    if (cursor !== this.cursor) {
      this.cursor = cursor;
      this.canvas.style.cursor = cursor;
    }

    const serial = app.clipboardSerial();
    if (serial !== this.clipboardSerial) {
      this.clipboardSerial = serial;
      const text = app.getClipboard();
      try {
        navigator.clipboard?.writeText(text).catch(() => {});
      } catch {
        // no clipboard access (insecure context, permissions): ImGui keeps its own copy
      }
    }
  }
}
