/**
 * What the Emulator page's scripted sections (request faults, host events, transitions) share: a list loaded from the
 * control API, a form whose strings are built into a request body (lib/emu-scripted.ts, an error per field), and one
 * notice (`role="status"`) saying what the last step did. A step that worked reloads the list and tells the page
 * (`onChange`, for sections whose steps move what the page shows elsewhere: the clock, the machines).
 */
import { useState, type FormEvent } from 'react';
import type { Built, FieldErrors } from '../../lib/emu-scripted.js';
import { useAction, useLoad } from '../../components/useLoad.js';

export interface ScriptedFormOptions<F, B, R, L> {
  /** The list, loaded again when `version` changes (the page's reset or restore). */
  load(): Promise<L>;
  version: number;
  initial: F;
  build(form: F): Built<B, F>;
  send(body: B): Promise<R>;
  /** The notice when `send` answered (a falsy answer counts as not done). */
  sent(reply: R, body: B): string;
  onChange?(): void;
}

export function useScriptedForm<F, B, R, L>(o: ScriptedFormOptions<F, B, R, L>) {
  const list = useLoad(o.load, [o.version]);
  const [form, setForm] = useState<F>(o.initial);
  const [errors, setErrors] = useState<FieldErrors<F>>({});
  const [done, setDone] = useState<string | null>(null);
  /** The form's own step (its error shown in the form). */
  const send = useAction();
  /** The list's steps (clear, cancel, remove; their error shown with the list's). */
  const listStep = useAction();

  const finish = async (notice: string) => {
    setDone(notice);
    await list.reload();
    o.onChange?.();
  };
  const set = <K extends keyof F>(k: K, v: F[K]) => {
    setForm((f) => ({ ...f, [k]: v }));
    setDone(null);
  };
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setDone(null);
    const b = o.build(form);
    setErrors(b.errors ?? {});
    if (!b.body) return;
    const body = b.body;
    const r = await send.run(() => o.send(body));
    if (r) await finish(o.sent(r, body));
  };
  /** A step on the list: `notice` once it answered (undefined is its failure). */
  const act = async (step: () => Promise<unknown>, notice: string) => {
    setDone(null);
    if ((await listStep.run(step)) !== undefined) await finish(notice);
  };
  return { list, form, errors, done, set, submit, send, listStep, act };
}
