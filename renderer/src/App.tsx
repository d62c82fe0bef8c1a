/** Root: theme, notifications, and the token gate in front of the console shell. */
import { Center, Loader, MantineProvider } from '@mantine/core';
import { Notifications, notifications } from '@mantine/notifications';
import { useEffect } from 'react';
import { desktopBridge, type ServiceNotice } from './api/desktop.ts';
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
  useEffect(() => desktopBridge()?.onServiceNotice?.(showServiceNotice), []);

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

/** The desktop app's notices about its service process (it restarts by itself after a crash). */
function showServiceNotice(notice: ServiceNotice): void {
  const id = 'service-process';
  if (notice.kind === 'crashed') {
    notifications.show({
      id,
      color: 'red',
      autoClose: false,
      loading: true,
      title: 'The service stopped',
      message: `It exited unexpectedly (code ${notice.code ?? 'none'}); restarting it…`,
    });
  } else if (notice.kind === 'restarted') {
    notifications.update({
      id,
      color: 'green',
      loading: false,
      autoClose: 5000,
      title: 'The service is back',
      message: 'Sessions reconnect by themselves.',
    });
  } else {
    notifications.update({
      id,
      color: 'red',
      loading: true,
      autoClose: false,
      title: 'The service did not start',
      message: `${notice.message} — trying again…`,
    });
  }
}
