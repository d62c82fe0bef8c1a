/** The running Switchboard version, from package.json (shown by `GET /api/` and `switchboard --version`). */
import pkg from '../../package.json' with { type: 'json' };

export const VERSION: string = pkg.version;
