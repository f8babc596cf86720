import java.io.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;

public class Props {
    static String esc(String s) {
        StringBuilder b = new StringBuilder();
        for (char c : s.toCharArray()) {
            if (c == '\\') b.append("\\\\");
            else if (c < 0x20 || c > 0x7e) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.toString();
    }
    public static void main(String[] args) throws Exception {
        for (String a : args) {
            Properties p = new Properties();
            String out;
            try (Reader r = Files.newBufferedReader(Paths.get(a), StandardCharsets.UTF_8)) {
                p.load(r);
                TreeMap<String, String> m = new TreeMap<>();
                for (String k : p.stringPropertyNames()) m.put(k, p.getProperty(k));
                StringBuilder b = new StringBuilder();
                for (Map.Entry<String, String> e : m.entrySet()) b.append(esc(e.getKey())).append('=').append(esc(e.getValue())).append(';');
                out = b.toString();
            } catch (Exception e) {
                out = "ERROR";
            }
            System.out.println(out);
        }
    }
}
