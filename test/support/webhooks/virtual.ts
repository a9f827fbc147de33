/**
 * One test on a virtual clock in a file whose other tests run on the real one: the file's
 * platform is uninstalled, a virtual one installed for the objects created meanwhile, then the
 * file's platform is installed again (each checked: 6 waiting per I/O context, none queued).
 */
import { SimulatedPlatform } from "./platform-sim";

/** Runs `fn` with a fresh virtual platform in place of `real` (see the file's header). */
export async function withVirtualPlatform<T>(real: SimulatedPlatform, fn: (sim: SimulatedPlatform) => Promise<T>): Promise<T> {
  real.restore();
  const sim = SimulatedPlatform.virtual().install();
  try {
    return await fn(sim);
  } finally {
    sim.restore();
    real.install();
  }
}
