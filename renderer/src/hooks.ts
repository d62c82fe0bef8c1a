/** Small shared hooks: an async loader with loading/error state. */
import { useCallback, useEffect, useRef, useState } from 'react';
import { errorMessage } from './api/client.ts';

export interface Async<T> {
  data: T | undefined;
  loading: boolean;
  error: string | null;
  reload(): Promise<void>;
  setData(d: T | undefined): void;
}

/** Runs `fn` on mount and whenever `deps` change; `reload()` runs it again. */
export function useAsync<T>(fn: () => Promise<T>, deps: unknown[]): Async<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<string | null>(null);
  const gen = useRef(0);
  const run = useCallback(fn, deps);
  const reload = useCallback(async () => {
    const g = ++gen.current;
    setLoading(true);
    setError(null);
    try {
      const d = await run();
      if (g === gen.current) setData(d);
    } catch (err) {
      if (g === gen.current) setError(errorMessage(err));
    } finally {
      if (g === gen.current) setLoading(false);
    }
  }, [run]);
  useEffect(() => {
    void reload();
  }, [reload]);
  return { data, loading, error, reload, setData };
}
