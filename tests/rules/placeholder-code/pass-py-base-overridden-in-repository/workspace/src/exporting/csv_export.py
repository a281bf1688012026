from . import export


class CsvExporter(export.Exporter):
    """Comma-separated values with a header row."""

    def header(self, columns):
        self.out.write(",".join(columns) + "\n")
