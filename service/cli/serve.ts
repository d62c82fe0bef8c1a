/**
 * `switchboard serve`: runs the service until SIGINT/SIGTERM. Stdout carries exactly `API: <url>` and, in
 * sandbox mode, `Sandbox: <url>` (one line each; other programs parse them); logs go to stderr.
 */
import { createLogger } from '../config/logger.ts';
import { ensureConsoleBuilt } from './console-build.ts';
import { resolveServiceConfig } from '../config/service-config.ts';
import { startService } from '../index.ts';
import { parseCommandLine } from './args.ts';
import { waitForShutdownSignal } from './signals.ts';

export const SERVE_USAGE = `Usage: switchboard serve [options]

Runs the Switchboard service: the REST API under /api and the WebSocket event stream.

Options:
  --host HOST              Interface to listen on (default 127.0.0.1; env SWITCHBOARD_HOST)
  --port PORT              API port, 0 picks a free one (default 7575; env SWITCHBOARD_PORT)
  --public-url URL         The API's address as clients reach it (a LAN address, a reverse proxy), e.g.
                           https://wa.example.com/api: media URLs are built from it and its host is accepted
                           (default: the URL on the API: line; env SWITCHBOARD_PUBLIC_URL)
  --data-dir DIR           Data directory (env SWITCHBOARD_DATA_DIR; default: the platform's data folder,
                           with a separate sandbox/ folder in sandbox mode)
  --sandbox                Test mode: start the built-in WhatsApp sandbox and connect to it (env SWITCHBOARD_SANDBOX=1)
  --sandbox-port PORT      Port of the in-process sandbox (default 0 = free; env SWITCHBOARD_SANDBOX_PORT)
  --wa-url URL             Sandbox mode only: a sandbox running elsewhere (ws:// or wss://; env SWITCHBOARD_WA_URL),
                           instead of the in-process one; live mode always connects to WhatsApp itself
  --wa-root-key KEY        Sandbox mode only: Noise root public key of the server at --wa-url (32 bytes, base64 or hex;
                           env SWITCHBOARD_WA_ROOT_KEY); in sandbox mode it is read from the sandbox when omitted
  --log-level LEVEL        fatal, error, warn, info, debug, trace or silent (default info; env SWITCHBOARD_LOG_LEVEL)
  --log-format FORMAT      pretty (readable lines), json (one object per line) or auto: pretty when stderr is a
                           terminal, else json (default auto; env SWITCHBOARD_LOG_FORMAT)
  --worker-id ID           Worker name shown on connections (default local; env SWITCHBOARD_WORKER_ID)
  --typing-delay-ms MIN-MAX  Typing pause before sends without skipPresence (default 800-2500; 0 turns it off;
                           env SWITCHBOARD_TYPING_DELAY_MS)
  --download-status-media  Download status-post media as it arrives (default: only when requested;
                           env SWITCHBOARD_DOWNLOAD_STATUS_MEDIA=1)
  --online-fallback-ms MS  A logged-in connection goes online this long after login even without the server's
                           offline-delivered marker (default 20000; env SWITCHBOARD_ONLINE_FALLBACK_MS)
  --allow-lan-webhooks     Let webhooks (also http://) and send-* url fetches reach loopback/private/ULA/CGNAT
                           addresses (env SWITCHBOARD_ALLOW_LAN_WEBHOOKS=1, or the allowLanWebhooks setting);
                           in sandbox mode webhooks may reach loopback without it
  --webhook-retry-delays MS,MS,MS,MS,MS  Delays before webhook attempts 1-5, the first 0
                           (default 0,5000,300000,1800000,7200000, each x U(0.8,1.2); env SWITCHBOARD_WEBHOOK_RETRY_DELAYS)
  --event-retention-days N Days the event log keeps events (default 7; env SWITCHBOARD_EVENT_RETENTION_DAYS)
  --billing-provider P     local or stripe (env SWITCHBOARD_BILLING_PROVIDER; default stripe when
                           SWITCHBOARD_STRIPE_SECRET_KEY is set, else local). The Stripe secret key is read from the
                           environment only (SWITCHBOARD_STRIPE_SECRET_KEY) and never logged
  --stripe-price-id ID     Recurring per-slot Stripe price (env SWITCHBOARD_STRIPE_PRICE_ID; needed for stripe)
  --stripe-api-base URL    Another Stripe API endpoint, e.g. a local fake (env SWITCHBOARD_STRIPE_API_BASE)
  --billing-success-url URL, --billing-cancel-url URL, --billing-return-url URL
                           Where Checkout and the portal send users back (default: the console's billing page;
                           env SWITCHBOARD_BILLING_SUCCESS_URL, _CANCEL_URL, _RETURN_URL)
  --default-slots N        local: slots each user starts with (default 100; env SWITCHBOARD_DEFAULT_SLOTS)
  --max-slots N            Most slots per account (default 100; env SWITCHBOARD_MAX_SLOTS)
  --billing-currency CODE  local: currency reported with amounts (default usd; env SWITCHBOARD_BILLING_CURRENCY)
  --jwt-issuer URL         Accept identity-provider JWTs from this issuer (with --jwt-audience and --jwks-url;
                           env SWITCHBOARD_JWT_ISSUER); without it only API tokens are accepted
  --jwt-audience AUD       Required JWT audience (env SWITCHBOARD_JWT_AUDIENCE)
  --jwks-url URL           The provider's JWKS (https://; http:// only on loopback; env SWITCHBOARD_JWKS_URL)
  --jwt-algorithms LIST    Accepted JWT algorithms (default RS256,ES256; env SWITCHBOARD_JWT_ALGORITHMS)
  --rate-limit N[/WINDOW]  Requests per user (per address on public routes), e.g. 3000/min (default), 100/10s,
                           0 = off (env SWITCHBOARD_RATE_LIMIT)
  --auth-failure-limit N   Failed authentications per address per window before 429 (default 30; 0 = off;
                           env SWITCHBOARD_AUTH_FAILURE_LIMIT)
  --allowed-hosts LIST     Extra Host header values to accept (name or name:port, comma-separated; * = any);
                           loopback names are always accepted (env SWITCHBOARD_ALLOWED_HOSTS)
  --allowed-origins LIST   Extra browser origins (e.g. http://localhost:5173) allowed to change state and open
                           the WebSocket; they also get CORS headers (env SWITCHBOARD_ALLOWED_ORIGINS)
  --min-free-mb N          Free space the data dir needs, in MiB: below it serve refuses to start, and sessions that
                           lost storage wait for it; below twice it the log and the console warn (default 100;
                           env SWITCHBOARD_MIN_FREE_MB)
  --workers N              Session worker threads (default 0 = the sessions run on the main thread, as before);
                           N >= 1 runs the WhatsApp sessions on a pool of N threads, while HTTP, the event stream
                           and webhooks stay on the main thread; see docs/scaling.md (env SWITCHBOARD_WORKERS)
  --max-streams-per-user N Open WebSocket event streams per user; more answer 429 (default 20; 0 = no cap;
                           env SWITCHBOARD_MAX_STREAMS_PER_USER)
  --max-large-uploads-per-user N  Request bodies over 1 MiB (media sends) in progress at once per user; more answer
                           429 (default 2; 0 = no cap; env SWITCHBOARD_MAX_LARGE_UPLOADS_PER_USER)
  -h, --help               Show this help

Prints "API: http://HOST:PORT/api" (and "Sandbox: http://HOST:PORT" in sandbox mode) on stdout once ready.
`;

/** Maximum time a clean shutdown may take before the process exits anyway. */
const SHUTDOWN_TIMEOUT_MS = 15_000;

export async function serveCommand(argv: string[]): Promise<number> {
  const { values } = parseCommandLine('serve', argv, {
    host: { type: 'string' },
    port: { type: 'string' },
    'data-dir': { type: 'string' },
    sandbox: { type: 'boolean' },
    'sandbox-port': { type: 'string' },
    'wa-url': { type: 'string' },
    'wa-root-key': { type: 'string' },
    'log-level': { type: 'string' },
    'log-format': { type: 'string' },
    'worker-id': { type: 'string' },
    'typing-delay-ms': { type: 'string' },
    'billing-provider': { type: 'string' },
    'stripe-price-id': { type: 'string' },
    'stripe-api-base': { type: 'string' },
    'billing-success-url': { type: 'string' },
    'billing-cancel-url': { type: 'string' },
    'billing-return-url': { type: 'string' },
    'default-slots': { type: 'string' },
    'max-slots': { type: 'string' },
    'billing-currency': { type: 'string' },
    'allow-lan-webhooks': { type: 'boolean' },
    'download-status-media': { type: 'boolean' },
    'online-fallback-ms': { type: 'string' },
    'webhook-retry-delays': { type: 'string' },
    'event-retention-days': { type: 'string' },
    'jwt-issuer': { type: 'string' },
    'jwt-audience': { type: 'string' },
    'jwks-url': { type: 'string' },
    'jwt-algorithms': { type: 'string' },
    'rate-limit': { type: 'string' },
    'auth-failure-limit': { type: 'string' },
    'allowed-hosts': { type: 'string' },
    'allowed-origins': { type: 'string' },
    'min-free-mb': { type: 'string' },
    'max-streams-per-user': { type: 'string' },
    'max-large-uploads-per-user': { type: 'string' },
    'public-url': { type: 'string' },
    workers: { type: 'string' },
  });
  if (values.help) {
    process.stdout.write(SERVE_USAGE);
    return 0;
  }
  const config = resolveServiceConfig({
    host: values.host,
    port: values.port,
    dataDir: values['data-dir'],
    sandbox: values.sandbox,
    sandboxPort: values['sandbox-port'],
    waUrl: values['wa-url'],
    waRootKey: values['wa-root-key'],
    logLevel: values['log-level'],
    logFormat: values['log-format'],
    workerId: values['worker-id'],
    typingDelayMs: values['typing-delay-ms'],
    downloadStatusMedia: values['download-status-media'],
    onlineFallbackMs: values['online-fallback-ms'],
    billingProvider: values['billing-provider'],
    stripePriceId: values['stripe-price-id'],
    stripeApiBase: values['stripe-api-base'],
    billingSuccessUrl: values['billing-success-url'],
    billingCancelUrl: values['billing-cancel-url'],
    billingReturnUrl: values['billing-return-url'],
    defaultSlots: values['default-slots'],
    maxSlots: values['max-slots'],
    billingCurrency: values['billing-currency'],
    allowLanWebhooks: values['allow-lan-webhooks'],
    webhookRetryDelays: values['webhook-retry-delays'],
    eventRetentionDays: values['event-retention-days'],
    jwtIssuer: values['jwt-issuer'],
    jwtAudience: values['jwt-audience'],
    jwksUrl: values['jwks-url'],
    jwtAlgorithms: values['jwt-algorithms'],
    rateLimit: values['rate-limit'],
    authFailureLimit: values['auth-failure-limit'],
    allowedHosts: values['allowed-hosts'],
    allowedOrigins: values['allowed-origins'],
    minFreeMb: values['min-free-mb'],
    maxStreamsPerUser: values['max-streams-per-user'],
    workers: values.workers,
    maxLargeUploadsPerUser: values['max-large-uploads-per-user'],
    publicUrl: values['public-url'],
  });
  const logger = createLogger(config.logLevel, config.logFormat);
  await ensureConsoleBuilt(); // a checkout's first run: the console at / works without a separate build step
  const stopRequested = waitForShutdownSignal(); // a signal during start-up stops the service once it is up
  const service = await startService(config, { logger });
  process.stdout.write(`API: ${service.apiUrl}\n`);
  if (service.sandboxUrl) process.stdout.write(`Sandbox: ${service.sandboxUrl}\n`);
  logger.info(
    { apiUrl: service.apiUrl, publicUrl: service.publicUrl, sandboxUrl: service.sandboxUrl, dataDir: config.dataDir },
    'switchboard ready',
  );

  const signal = await stopRequested;
  logger.info({ signal }, 'shutting down');
  const timer = setTimeout(() => {
    logger.error('shutdown timed out; exiting');
    process.exit(1);
  }, SHUTDOWN_TIMEOUT_MS);
  timer.unref();
  await service.close();
  clearTimeout(timer);
  logger.info('stopped');
  return 0;
}
