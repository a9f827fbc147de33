/**
 * The webhook receivers of the tests are the simulated platform's (platform-sim.ts); this
 * name stays for the test files that only need receivers.
 */
export { SimulatedPlatform as Receivers } from "./platform-sim";
