import java.io.*;
import java.nio.*;
import java.nio.file.*;
import java.util.*;
import java.util.zip.*;
// Follows commons-compress GzipCompressorOutputStream (writeHeader, write, deflate, finish, writeTrailer) with
// GzipParameters' defaults (modification time 0, operating system 255, buffer 512) as LS JsonFormatWriter.write
// drives it: one write of the line's bytes, one of the line separator, per record.
public class Gz {
  public static void main(String[] a) throws Exception {
    int level = Integer.parseInt(a[0]);
    List<String> lines = Files.readAllLines(Paths.get(a[1]), java.nio.charset.StandardCharsets.UTF_8);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    Deflater deflater = new Deflater(level, true);
    CRC32 crc = new CRC32();
    byte[] buf = new byte[512];
    ByteBuffer h = ByteBuffer.allocate(10).order(ByteOrder.LITTLE_ENDIAN);
    h.putShort((short) GZIPInputStream.GZIP_MAGIC); h.put((byte) 8); h.put((byte) 0); h.putInt(0);
    h.put((byte) (level == 9 ? 2 : level == 1 ? 4 : 0)); h.put((byte) 255);
    out.write(h.array());
    for (String line : lines) {
      for (byte[] data : new byte[][] { line.getBytes("UTF-8"), "\n".getBytes("UTF-8") }) {
        deflater.setInput(data, 0, data.length);
        while (!deflater.needsInput()) { int n = deflater.deflate(buf, 0, buf.length); if (n > 0) out.write(buf, 0, n); }
        crc.update(data, 0, data.length);
      }
    }
    deflater.finish();
    while (!deflater.finished()) { int n = deflater.deflate(buf, 0, buf.length); if (n > 0) out.write(buf, 0, n); }
    ByteBuffer t = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
    t.putInt((int) crc.getValue()); t.putInt(deflater.getTotalIn());
    out.write(t.array());
    System.out.println(Base64.getEncoder().encodeToString(out.toByteArray()));
  }
}
