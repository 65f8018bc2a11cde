/**
 * `onelog/broker`: the embedded broker ({@link Broker}, opened with `Broker.open`) and its options. The client
 * (`onelog`) takes it as its API: `new Onelog({ api: await Broker.open({ dataDir: './data' }) })`.
 */
export { Broker } from './broker.js';
export type { BrokerOptions } from './options.js';
