package dev.baton;

import java.security.SecureRandom;

/**
 * UUIDv7 task ids (RFC 9562) by Baton's rule (src/core/uuid7.cpp): 48-bit Unix milliseconds,
 * version 7, a 12-bit counter, variant {@code 10}, 62 random bits; lowercase canonical 8-4-4-4-12
 * text. The counter makes {@link #generate()} monotonic within the process (RFC 9562 section 6.2,
 * method 1): on a new millisecond it starts at a random value below 2048, within the same
 * millisecond (or when the clock steps back) it is incremented, and when it would overflow 12 bits
 * the timestamp moves one millisecond ahead. The texts therefore sort in creation order.
 */
public final class UuidV7 {
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final char[] HEX = "0123456789abcdef".toCharArray();
    private static final Object LOCK = new Object();
    private static long lastMs = -1;
    private static int counter;

    private UuidV7() {}

    /**
     * @return a new id for the current time, greater than every id this method returned before
     *     in this process
     */
    public static String generate() {
        long now = System.currentTimeMillis();
        long ms;
        int c;
        synchronized (LOCK) {
            if (now > lastMs) {
                lastMs = now;
                counter = RANDOM.nextInt(0x800);
            } else if (++counter > 0xfff) {
                lastMs++;
                counter = RANDOM.nextInt(0x800);
            }
            ms = lastMs;
            c = counter;
        }
        return format(ms, c);
    }

    /**
     * An id with a given timestamp and a random counter (no ordering with other ids of the same
     * millisecond; task ids come from {@link #generate()}).
     *
     * @param unixMs the timestamp to embed
     * @return a new id with that timestamp
     */
    public static String generate(long unixMs) {
        return format(unixMs, RANDOM.nextInt(0x1000));
    }

    private static String format(long unixMs, int counter) {
        byte[] b = new byte[16];
        RANDOM.nextBytes(b);
        for (int i = 0; i < 6; i++) {
            b[i] = (byte) (unixMs >>> (40 - 8 * i));
        }
        b[6] = (byte) (0x70 | (counter >>> 8));
        b[7] = (byte) counter;
        b[8] = (byte) ((b[8] & 0x3f) | 0x80);
        StringBuilder s = new StringBuilder(36);
        for (int i = 0; i < 16; i++) {
            if (i == 4 || i == 6 || i == 8 || i == 10) {
                s.append('-');
            }
            s.append(HEX[(b[i] >> 4) & 0xf]).append(HEX[b[i] & 0xf]);
        }
        return s.toString();
    }

    /**
     * The Unix milliseconds of a UUIDv7 text.
     *
     * @param id a canonical UUIDv7
     * @return its timestamp
     */
    public static long timestamp(String id) {
        return Long.parseLong(id.substring(0, 8) + id.substring(9, 13), 16);
    }
}
