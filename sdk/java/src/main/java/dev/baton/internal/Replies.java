package dev.baton.internal;

import dev.baton.BatonException;
import dev.baton.ErrorCode;
import java.nio.charset.StandardCharsets;
import java.util.List;

/** Typed views of raw RESP replies; an unexpected shape is an {@code internal} error. */
public final class Replies {
    private Replies() {}

    /** @param o a reply @return it as text (bulk string or integer) */
    public static String string(Object o) {
        if (o instanceof byte[] b) {
            return new String(b, StandardCharsets.UTF_8);
        }
        if (o instanceof Long l) {
            return Long.toString(l);
        }
        if (o == null) {
            return "";
        }
        throw unexpected("a string", o);
    }

    /** @param o a reply @return it as bytes */
    public static byte[] bytes(Object o) {
        if (o instanceof byte[] b) {
            return b;
        }
        return string(o).getBytes(StandardCharsets.UTF_8);
    }

    /** @param o a reply @return it as an integer */
    public static long integer(Object o) {
        if (o instanceof Long l) {
            return l;
        }
        try {
            return Long.parseLong(string(o));
        } catch (NumberFormatException e) {
            throw unexpected("an integer", o);
        }
    }

    /** @param o a reply @return it as an array */
    @SuppressWarnings("unchecked")
    public static List<Object> list(Object o) {
        if (o instanceof List<?> l) {
            return (List<Object>) l;
        }
        throw unexpected("an array", o);
    }

    private static BatonException unexpected(String what, Object o) {
        return new BatonException(ErrorCode.INTERNAL, "unexpected reply: expected " + what + ", got "
                + (o == null ? "nil" : o.getClass().getSimpleName()), null);
    }
}
