/** Root: theme, notifications, and the token gate in front of the console shell. */
import { Center, Loader, MantineProvider } from '@mantine/core';
import { Notifications } from '@mantine/notifications';
import { useEffect } from 'react';
import { Shell } from './components/Shell.tsx';
import { useSession } from './stores/session.ts';
import { theme } from './theme.ts';
import { TokenGate } from './views/TokenGate.tsx';

export function App() {
  const phase = useSession((s) => s.phase);
  const boot = useSession((s) => s.boot);
  useEffect(() => {
    void boot();
  }, [boot]);

  return (
    <MantineProvider theme={theme} defaultColorScheme="auto">
      <Notifications position="top-right" />
      {phase === 'booting' && (
        <Center h="100vh">
          <Loader aria-label="Loading" />
        </Center>
      )}
      {phase === 'need-token' && <TokenGate />}
      {phase === 'ready' && <Shell />}
    </MantineProvider>
  );
}
