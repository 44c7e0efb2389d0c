import { useCallback, useEffect, useState, type FormEvent } from 'react';
import { errorText } from '../lib/api.js';

/** Loads `fn()` on mount and on `reload()`; the error is the API's `msg`, for an ErrorNote where the data would be. */
export function useLoad<T>(fn: () => Promise<T>, deps: unknown[] = []): { data: T | undefined; error: string | null; loading: boolean; reload(): Promise<void> } {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  // eslint-disable-next-line react-hooks/exhaustive-deps
  const load = useCallback(fn, deps);
  const reload = useCallback(async () => {
    setLoading(true);
    try {
      setData(await load());
      setError(null);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setLoading(false);
    }
  }, [load]);
  useEffect(() => {
    void reload();
  }, [reload]);
  return { data, error, loading, reload };
}

/** Runs an action, keeping its error (the API's `msg`) and busy flag for the control that started it. */
export function useAction(): { busy: boolean; error: string | null; run<T>(fn: () => Promise<T>): Promise<T | undefined>; clear(): void } {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const run = useCallback(async <T,>(fn: () => Promise<T>) => {
    setBusy(true);
    setError(null);
    try {
      return await fn();
    } catch (err) {
      setError(errorText(err));
      return undefined;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run, clear: () => setError(null) };
}

/**
 * useAction for a form's steps: `submit(fn)` is a submit or click handler that keeps the page from reloading and runs
 * `fn`, its error shown in the form's ErrorNote, its controls disabled while it runs.
 */
export function useFormAction(): { busy: boolean; error: string | null; submit(fn: () => Promise<void>): (e?: FormEvent) => Promise<void> } {
  const { busy, error, run } = useAction();
  const submit = (fn: () => Promise<void>) => async (e?: FormEvent) => {
    e?.preventDefault();
    await run(fn);
  };
  return { busy, error, submit };
}
