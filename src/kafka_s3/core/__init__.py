"""The pure core: what a backup is, independent of where it runs.

Object layout and names, chunk manifests, rotation rules, the record shape, formats, partitioners, converters,
transforms, configuration and errors. Nothing under this package imports Spark, a Kafka client, an S3 client or any
other network client (an import contract in ``make lint`` checks it), so all of it is unit-tested without services.
"""
