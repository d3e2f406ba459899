// Prints, for each pattern (one per line of patterns.txt) and each instant below, what Lenses' sink names a
// PARTITIONBY _date.<pattern> directory: DateTimeFormatter.ofPattern(pattern).withZone(zone).format(instant)
// (LS sink/config/PartitionField.DatePartitionField), here with Locale.ENGLISH and the zones listed.
// Run: java -Duser.language=en DatePatterns.java < patterns.txt > golden.tsv
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Instant;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.util.Locale;

public class DatePatterns {
    public static void main(String[] args) throws Exception {
        long[] millis = {1270188000000L, 1340863199999L, 1577849400123L, 1704067199999L, 946684800000L, 43200000L,
            1709251199001L};
        String[] zones = {"UTC", "Asia/Kolkata", "America/New_York"};
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        String pattern;
        while ((pattern = in.readLine()) != null) {
            if (pattern.isEmpty()) continue;
            for (String zone : zones) {
                DateTimeFormatter f = DateTimeFormatter.ofPattern(pattern, Locale.ENGLISH).withZone(ZoneId.of(zone));
                for (long ms : millis) {
                    System.out.println(pattern + "\t" + zone + "\t" + ms + "\t" + f.format(Instant.ofEpochMilli(ms)));
                }
            }
        }
    }
}
