/**
 * Baton for Java: a producer ({@link dev.baton.BatonClient}, tasks built with {@link
 * dev.baton.TaskRequest}) and a worker ({@link dev.baton.Worker}, handlers are {@link
 * dev.baton.TaskHandler}s that receive a {@link dev.baton.Task}), speaking Baton's protocol v2
 * (the Redis Functions library {@code baton_v2}), so tasks cross freely between Java, C++,
 * Python, Node.js and Go.
 *
 * <p>Payloads stay byte-exact and numbers exact ({@link java.math.BigInteger}, {@link
 * java.math.BigDecimal}); fields this SDK does not know travel on untouched ({@link
 * dev.baton.Task#extra()}, {@link dev.baton.ExtensibleObject}, {@link
 * dev.baton.TaskRequest#from(Task)}). Every error is a {@link dev.baton.BatonException} with a
 * contract {@link dev.baton.ErrorCode}.
 */
package dev.baton;
