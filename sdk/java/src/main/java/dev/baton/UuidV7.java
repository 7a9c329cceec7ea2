package dev.baton;

import java.security.SecureRandom;

/**
 * UUIDv7 task ids (RFC 9562): 48-bit Unix milliseconds, version 7, variant {@code 10}, the rest
 * random; lowercase canonical 8-4-4-4-12 text.
 */
public final class UuidV7 {
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private UuidV7() {}

    /**
     * @return a new id for the current time
     */
    public static String generate() {
        return generate(System.currentTimeMillis());
    }

    /**
     * @param unixMs the timestamp to embed
     * @return a new id with that timestamp
     */
    public static String generate(long unixMs) {
        byte[] b = new byte[16];
        RANDOM.nextBytes(b);
        for (int i = 0; i < 6; i++) {
            b[i] = (byte) (unixMs >>> (40 - 8 * i));
        }
        b[6] = (byte) ((b[6] & 0x0f) | 0x70);
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
