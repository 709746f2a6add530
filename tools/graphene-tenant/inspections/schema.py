import django_filters
import graphene
from graphene import relay
from graphene_django import DjangoObjectType
from graphene_django.filter import DjangoFilterConnectionField

from .models import Inspection, Inspector


class InspectionFilter(django_filters.FilterSet):
    order_by = django_filters.OrderingFilter(fields=(("updated_at", "updated_at"), ("id", "id")))

    class Meta:
        model = Inspection
        fields = {"updated_at": ["exact", "gt", "gte", "lt"], "status": ["exact"], "title": ["icontains"]}


class InspectorNode(DjangoObjectType):
    class Meta:
        model = Inspector
        interfaces = (relay.Node,)
        fields = ("name", "inspections")
        filter_fields = ["name"]


class InspectionNode(DjangoObjectType):
    class Meta:
        model = Inspection
        interfaces = (relay.Node,)
        fields = ("title", "status", "score", "inspector", "updated_at")
        filterset_class = InspectionFilter


class Query(graphene.ObjectType):
    node = relay.Node.Field()
    all_inspections = DjangoFilterConnectionField(InspectionNode)
    all_inspectors = DjangoFilterConnectionField(InspectorNode)


schema = graphene.Schema(query=Query)
