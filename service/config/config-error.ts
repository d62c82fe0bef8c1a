/** A flag, environment or settings-file value that cannot be used; the CLI reports it as a usage error (exit 2). */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** A start-up problem reported as one line (`switchboard: <message>`, exit 1), without a stack trace. */
export class StartupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StartupError';
  }
}
