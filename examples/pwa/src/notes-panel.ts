// The notes panel of the assistant's sidebar: the notes listed (each a row `#note-<id>`, to delete), added by hand (a
// title and a text, typed, pasted or read from a .txt/.md file), searched from the sidebar, and the embedding model
// that makes the search one by meaning (`?embed=<url>` or the panel's field, DEFAULT_EMBED_MODEL by default; an engine of
// its own in this tab, its file kept in the model store like the chat model's, so it loads offline). Every change
// embeds what needs it (note-index.ts). showSources() lists under an answer the notes its searches returned, linked
// to their rows.

import { createEngine, type Backend, type IntabEngine } from 'intab';
import { describeProgress, originNote } from '@intab/example-chat/chat-view';
import { findPassages, SEARCH_RESULTS } from './assistant-tools.ts';
import { engineEmbedder, type IndexState, type NoteIndex, type Passage } from './note-index.ts';
import { NOTE_LIMITS, type NotesStore } from './notes.ts';

/**
 * The embedding model the panel offers (all-MiniLM-L6-v2 as llama.cpp converts it: 384 dimensions, ~25 MB at Q8_0),
 * downloaded once into the model store when the user asks for search by meaning.
 */
export const DEFAULT_EMBED_MODEL = 'https://huggingface.co/second-state/All-MiniLM-L6-v2-Embedding-GGUF/resolve/main/all-MiniLM-L6-v2-Q8_0.gguf';

/** The panel's elements (ids as in index.html). */
export interface NotesPanelElements {
  notes: HTMLUListElement;
  notesStatus: HTMLDivElement;
  embedUrl: HTMLInputElement;
  embedLoad: HTMLButtonElement;
  embedProgress: HTMLProgressElement;
  embedStatus: HTMLDivElement;
  noteForm: HTMLFormElement;
  noteTitle: HTMLInputElement;
  noteText: HTMLTextAreaElement;
  noteFile: HTMLInputElement;
  noteError: HTMLDivElement;
  notesSearch: HTMLInputElement;
  notesFound: HTMLOListElement;
}

export interface NotesPanel {
  /** Lists the notes again. */
  showNotes(): Promise<void>;
  /** Embeds the notes that need it (after a change made elsewhere, e.g. by save_note). */
  indexNotes(): Promise<void>;
  /** Loads an embedding model (its URL or Hugging Face id), then embeds the notes that need it. */
  loadEmbedder(model: string): Promise<void>;
  /** Under the last answer in `messages`: "Sources", the notes of `found` (best first, once each), linked. */
  showSources(messages: HTMLElement, found: Passage[]): void;
}

/**
 * Wires the panel. `row` builds a row of a stored-things list; `onModelsChanged` is called once an embedding model
 * was loaded (or failed to), for the page's list of stored models.
 * @example
 * const panel = notesPanel(ui, { notes, index, backend: 'auto', row: storedRow, onModelsChanged: showStored });
 * await panel.loadEmbedder(DEFAULT_EMBED_MODEL);
 */
export function notesPanel(
  ui: NotesPanelElements,
  deps: { notes: NotesStore; index: NoteIndex; backend: Backend; row(text: string, title: string, buttons: Record<string, () => unknown>): HTMLLIElement; onModelsChanged(): void },
): NotesPanel {
  const { notes, index } = deps;
  let embedEngine: IntabEngine | undefined;
  let embedLoading: AbortController | undefined;
  /** What the embedding model line says before the index's figures. */
  let embedDescription = '';

  /** The notes on this device, newest first, to delete; each row is `#note-<id>`, which sources link to. */
  async function showNotes(): Promise<void> {
    const list = await notes.list();
    ui.notes.replaceChildren(
      ...list.map((n) => {
        const li = deps.row(n.title, `${n.text.slice(0, 500)}${n.text.length > 500 ? '…' : ''}\n(saved ${new Date(n.created).toLocaleString()})`, {
          Delete: async () => {
            // Its passages and vectors go with it (one transaction).
            await notes.delete(n.id);
            void showNotes();
            void indexNotes();
          },
        });
        li.id = `note-${n.id}`;
        li.dataset.note = n.id;
        return li;
      }),
    );
    const where = notes.persistent ? ', kept on this device' : ', kept in this tab only (this browser gives the page no IndexedDB)';
    ui.notesStatus.textContent = `${list.length} note${list.length === 1 ? '' : 's'}${where}. Add one above, or ask the assistant to note something.`;
  }

  /** Scrolls the sidebar to a note and marks it; false when it was deleted. */
  function showNote(id: string): boolean {
    const li = document.getElementById(`note-${id}`);
    for (const other of ui.notes.querySelectorAll('li.current')) other.classList.remove('current');
    if (!li) return false;
    li.classList.add('current');
    li.scrollIntoView({ block: 'center', behavior: 'smooth' });
    return true;
  }

  /** A link to a note in the sidebar: its title, and the score of the passage found. */
  function noteLink(p: Passage): HTMLElement[] {
    const a = Object.assign(document.createElement('a'), { href: `#note-${p.noteId}`, textContent: p.title, className: 'source' });
    a.dataset.note = p.noteId;
    a.onclick = (e) => {
      e.preventDefault();
      if (!showNote(p.noteId)) a.classList.add('gone');
    };
    const out: HTMLElement[] = [a];
    if (p.score !== undefined) out.push(Object.assign(document.createElement('span'), { className: 'score', textContent: p.score.toFixed(2) }));
    return out;
  }

  /** Under the last answer: "Sources", the notes the searches of its message returned, one line each, best first. */
  function showSources(messages: HTMLElement, found: Passage[]): void {
    const answer = [...messages.querySelectorAll('.msg.assistant')].at(-1);
    if (!answer || !found.length) return;
    const best = new Map<string, Passage>();
    for (const p of [...found].sort((a, b) => (b.score ?? 0) - (a.score ?? 0))) if (!best.has(p.noteId)) best.set(p.noteId, p);
    const box = Object.assign(document.createElement('div'), { className: 'sources' });
    const list = document.createElement('ol');
    for (const p of best.values()) {
      const li = document.createElement('li');
      li.append(...noteLink(p));
      list.append(li);
    }
    box.append(Object.assign(document.createElement('div'), { className: 'sources-label', textContent: 'Sources' }), list);
    answer.insertBefore(box, answer.querySelector('.stats'));
  }

  // ---- notes added by hand, and the sidebar's search ----

  // Another window of the assistant added or deleted a note: list it here too, and embed what needs it.
  notes.onExternalChange(() => {
    void showNotes();
    void indexNotes();
  });

  ui.noteForm.onsubmit = async (e) => {
    e.preventDefault();
    ui.noteError.textContent = '';
    try {
      await notes.add({ title: ui.noteTitle.value, text: ui.noteText.value });
    } catch (err) {
      ui.noteError.textContent = (err as Error).message;
      return;
    }
    ui.noteForm.reset();
    await showNotes();
    void indexNotes();
  };
  // A .txt or .md file fills the form (its name the title), to read before adding it.
  ui.noteFile.onchange = async () => {
    const file = ui.noteFile.files?.[0];
    if (!file) return;
    ui.noteError.textContent = '';
    if (file.size > NOTE_LIMITS.document * 4) {
      ui.noteError.textContent = `${file.name} is ${(file.size / 2 ** 20).toFixed(1)} MiB: a note holds at most ${NOTE_LIMITS.document} characters.`;
      return;
    }
    ui.noteText.value = await file.text();
    if (!ui.noteTitle.value.trim()) ui.noteTitle.value = file.name.replace(/\.(txt|md|markdown)$/i, '').slice(0, NOTE_LIMITS.title);
  };
  // Enter in the search field: the passages search_notes would return, linked to their notes.
  ui.notesSearch.onkeydown = async (e) => {
    if (e.key !== 'Enter') return;
    e.preventDefault();
    const query = ui.notesSearch.value;
    const { by, found } = await findPassages({ notes, searchByMeaning: (q, k) => index.search(q, k) }, query, SEARCH_RESULTS);
    ui.notesFound.replaceChildren(
      ...found.map((p) => {
        const li = document.createElement('li');
        li.append(...noteLink(p), Object.assign(document.createElement('span'), { className: 'snippet', textContent: p.text }));
        return li;
      }),
    );
    ui.notesFound.dataset.by = by;
    if (!found.length) ui.notesFound.append(Object.assign(document.createElement('li'), { className: 'muted', textContent: `No note matches (by ${by}).` }));
  };

  // ---- the embedding model: search by meaning ----

  /** The embedding line: which model, how the notes are searched, and what is indexed. */
  function showIndexState(s: IndexState): void {
    if (!index.embedder) {
      ui.embedStatus.textContent = `No embedding model: notes are searched by keywords (every word of the query must appear). "Search by meaning" loads the model above (the default: all-MiniLM-L6-v2, ~25 MB, downloaded once and kept on this device).`;
      return;
    }
    const passages = `${s.passages} passage${s.passages === 1 ? '' : 's'} of ${s.notes} note${s.notes === 1 ? '' : 's'} indexed`;
    ui.embedStatus.textContent = `Notes are searched by meaning: ${embedDescription} · ${passages}${s.pending ? ` · embedding ${s.pending} more…` : ''}`;
  }

  /** Embeds the notes that have no vectors of the model in use yet (none: nothing to do), showing progress. */
  async function indexNotes(): Promise<void> {
    try {
      showIndexState(await index.sync({ onProgress: showIndexState }));
    } catch (err) {
      ui.embedStatus.textContent = `${embedDescription} · the notes could not be embedded: ${(err as Error).message}`;
    }
  }

  /** Loads an embedding model in an engine of its own (this tab's), then embeds the notes that need it. */
  async function loadEmbedder(model: string): Promise<void> {
    embedLoading?.abort();
    const controller = (embedLoading = new AbortController());
    index.use(undefined);
    const previous = embedEngine;
    embedEngine = undefined;
    await previous?.destroy();
    ui.embedProgress.hidden = false;
    ui.embedProgress.value = 0;
    ui.embedStatus.textContent = `Loading ${model}…`;
    try {
      const loaded = await createEngine(
        {
          model,
          backend: deps.backend,
          onProgress: (p) => {
            ui.embedProgress.value = p.total ? p.loaded / p.total : 0;
            ui.embedStatus.textContent = `Embedding model: ${describeProgress(p)}`;
          },
        },
        { signal: controller.signal },
      );
      if (controller.signal.aborted) return void loaded.destroy();
      const e = loaded.info.embedding;
      if (!e) {
        await loaded.destroy();
        throw new Error('it generates text and does not embed: pick an embedding model (all-MiniLM-L6-v2, bge-small, nomic-embed-text-v1.5), or load it as the chat model above');
      }
      embedEngine = loaded;
      embedDescription = `${loaded.model} — ${loaded.info.arch}, ${e.dimensions} dimensions, on ${loaded.info.backend.name}${originNote(loaded)}`;
      index.use(engineEmbedder(loaded, model));
      ui.embedUrl.value = model;
      // A reload (offline too) loads the same embedding model, from the store.
      const url = new URL(location.href);
      url.searchParams.set('embed', model);
      history.replaceState(null, '', url);
      await indexNotes();
    } catch (err) {
      if (!controller.signal.aborted) ui.embedStatus.textContent = `Could not load the embedding model ${model}: ${(err as Error).message} · notes are searched by keywords.`;
    } finally {
      ui.embedProgress.hidden = true;
      deps.onModelsChanged();
    }
  }

  ui.embedLoad.onclick = () => {
    const model = ui.embedUrl.value.trim();
    if (model) void loadEmbedder(model);
  };

  ui.embedUrl.value = DEFAULT_EMBED_MODEL;
  showIndexState({ embedded: 0, passages: 0, notes: 0, pending: 0 });
  return { showNotes, indexNotes, loadEmbedder, showSources };
}
