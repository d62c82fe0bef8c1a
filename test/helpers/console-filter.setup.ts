/** Vitest setup file: the service's libsignal console filter, so key material never reaches the test output. */
import { installConsoleFilter } from '../../service/config/console-filter.ts';

installConsoleFilter();
