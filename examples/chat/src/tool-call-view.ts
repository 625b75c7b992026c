// How a tool call shows in the conversation, on both chat pages: the function's name, its arguments as they stream
// (JSON text, growing), a confirmation the page may ask for (Allow / Decline), and the result. Everything is set as
// text, never parsed as HTML: the model writes the arguments, and a tool's result may quote them.

import type { ToolCallMade } from './tool-calls.ts';

/** How a call ended, as the page shows it. */
export type ToolCallStatus = 'done' | 'failed' | 'declined' | 'not-run';

/** One call's box in an answer. */
export interface ToolCallBox {
  readonly root: HTMLElement;
  /** Shows the call as it stands (its name, its arguments so far). */
  update(call: ToolCallMade): void;
  /**
   * Asks the user whether the call may run: `question` and two buttons. Resolves true (Allow) or false (Decline);
   * rejects with the signal's reason when it aborts first (the buttons then go).
   */
  confirm(question: string, signal: AbortSignal): Promise<boolean>;
  /** Shows the result (the tool message's content) and how the call ended. */
  result(status: ToolCallStatus, content: string): void;
}

const LABELS: Record<ToolCallStatus, string> = { done: 'result', failed: 'error', declined: 'declined', 'not-run': 'not run' };

/** A call's box, appended to `container` (built node by node: nothing here parses HTML). */
export function toolCallBox(container: HTMLElement): ToolCallBox {
  const el = <K extends keyof HTMLElementTagNameMap>(tag: K, className: string, text = '') => Object.assign(document.createElement(tag), { className, textContent: text });
  const root = el('div', 'tool-call');
  const name = el('div', 'tool-name');
  const args = el('pre', 'tool-args');
  root.append(name, args);
  container.append(root);
  return {
    root,
    update(call) {
      name.textContent = `⚙ ${call.function.name}`;
      args.textContent = call.function.arguments;
    },
    confirm(question, signal) {
      const box = el('div', 'tool-confirm');
      const allow = el('button', 'tool-allow', 'Allow');
      const decline = el('button', 'tool-decline secondary', 'Decline');
      allow.type = decline.type = 'button';
      box.append(el('span', 'tool-question', question), allow, decline);
      // No button takes the focus: an Enter meant for the message box must not allow a change.
      root.append(box);
      return new Promise<boolean>((resolve, reject) => {
        const settle = (answer: boolean | undefined) => {
          box.remove();
          signal.removeEventListener('abort', onAbort);
          if (answer === undefined) reject(signal.reason);
          else resolve(answer);
        };
        const onAbort = () => settle(undefined);
        if (signal.aborted) return onAbort();
        signal.addEventListener('abort', onAbort);
        allow.onclick = () => settle(true);
        decline.onclick = () => settle(false);
      });
    },
    result(status, content) {
      root.classList.add(status);
      root.append(el('div', 'tool-result', `${LABELS[status]}: ${content}`));
    },
  };
}
