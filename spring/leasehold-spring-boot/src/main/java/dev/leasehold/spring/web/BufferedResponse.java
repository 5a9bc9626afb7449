package dev.leasehold.spring.web;

import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.WriteListener;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpServletResponseWrapper;
import java.io.ByteArrayOutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;

/**
 * The servlet response an {@link Idempotent} MVC handler writes its own answer to: the status and
 * body it writes are kept here, and nothing reaches the client, until the answer is stored with the
 * handler's transaction; headers go to the real response as they are set. Not thread-safe (one
 * request).
 */
final class BufferedResponse extends HttpServletResponseWrapper {

    private final ByteArrayOutputStream body = new ByteArrayOutputStream();
    private int status = SC_OK;
    private String error;
    private ServletOutputStream stream;
    private PrintWriter writer;

    BufferedResponse(HttpServletResponse response) {
        super(response);
    }

    /** The status the handler set (200 if none). */
    @Override
    public int getStatus() {
        return status;
    }

    @Override
    public void setStatus(int sc) {
        status = sc;
    }

    @Override
    public void sendError(int sc, String msg) {
        status = sc;
        error = sc + (msg == null ? "" : " " + msg);
    }

    @Override
    public void sendError(int sc) {
        sendError(sc, null);
    }

    @Override
    public void sendRedirect(String location) {
        sendRedirect(location, SC_FOUND, true);
    }

    @Override
    public void sendRedirect(String location, int sc, boolean clearBuffer) {
        if (clearBuffer) {
            resetBuffer();
        }
        status = sc;
        setHeader("Location", location);
    }

    /** The status and message of a {@code sendError}, or null if the handler did not call it. */
    String error() {
        return error;
    }

    @Override
    public ServletOutputStream getOutputStream() {
        if (writer != null) {
            throw new IllegalStateException("getWriter() has already been called on this response");
        }
        if (stream == null) {
            stream = new ServletOutputStream() {
                @Override
                public void write(int b) {
                    body.write(b);
                }

                @Override
                public void write(byte[] b, int off, int len) {
                    body.write(b, off, len);
                }

                @Override
                public boolean isReady() {
                    return true;
                }

                @Override
                public void setWriteListener(WriteListener listener) {
                    throw new UnsupportedOperationException(
                            "an @Idempotent handler's answer is kept until it is stored; it cannot be written"
                                    + " asynchronously");
                }
            };
        }
        return stream;
    }

    @Override
    public PrintWriter getWriter() {
        if (stream != null) {
            throw new IllegalStateException("getOutputStream() has already been called on this response");
        }
        if (writer == null) {
            String encoding = getCharacterEncoding();
            Charset charset = encoding == null ? StandardCharsets.ISO_8859_1 : Charset.forName(encoding);
            writer = new PrintWriter(new OutputStreamWriter(body, charset));
        }
        return writer;
    }

    /** Nothing is sent before the answer is stored. */
    @Override
    public void flushBuffer() {
        if (writer != null) {
            writer.flush();
        }
    }

    @Override
    public boolean isCommitted() {
        return false;
    }

    @Override
    public void resetBuffer() {
        flushBuffer();
        body.reset();
    }

    @Override
    public void reset() {
        super.reset();
        resetBuffer();
        status = SC_OK;
        error = null;
    }

    @Override
    public void setContentLength(int len) {
        // the length of the stored body is sent with it
    }

    @Override
    public void setContentLengthLong(long len) {
        // the length of the stored body is sent with it
    }

    @Override
    public void setBufferSize(int size) {
        // the whole answer is kept
    }

    /** The body the handler wrote, or null if it wrote none. */
    byte[] body() {
        flushBuffer();
        return body.size() == 0 && stream == null && writer == null ? null : body.toByteArray();
    }
}
