/** A flag, environment or settings-file value that cannot be used; the CLI reports it as a usage error (exit 2). */
export class ConfigError extends Error {
  override name = 'ConfigError';
}
